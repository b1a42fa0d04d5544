//! Build script of the simulated DCGM library: gives the `cdylib` the SONAME of the real
//! library, `libdcgm.so.4`, and keeps the symbols of the Rust libraries it links (nvml-sim's
//! C functions among them, should a workspace build turn nvml-sim's `ffi` feature on) out of
//! its dynamic symbol table, so that it exports DCGM's functions and `dcgmSim*` only. It must
//! not do anything else.
//!
//! Both go out as `rustc-link-arg` (this package's own targets only; on its binary and tests
//! they are harmless): cargo passes a dependency's `rustc-cdylib-link-arg` on to every cdylib
//! that depends on it (cargo issue 9562), which is how nvml-sim's SONAME once ended up here.

fn main() {
    println!("cargo:rustc-link-arg=-Wl,-soname,libdcgm.so.4");
    println!("cargo:rustc-link-arg=-Wl,--exclude-libs,ALL");
    println!("cargo:rerun-if-changed=build.rs");
}
