//! Build script of the simulated DCGM library: gives the `cdylib` the SONAME of the real
//! library, `libdcgm.so.4`, and keeps the symbols of the Rust libraries it links (nvml-sim's
//! C functions among them, should a workspace build turn nvml-sim's `ffi` feature on) out of
//! its dynamic symbol table, so that it exports DCGM's functions and `dcgmSim*` only. It must
//! not do anything else.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdcgm.so.4");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
    println!("cargo:rerun-if-changed=build.rs");
}
