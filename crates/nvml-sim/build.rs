//! Build script of the simulated NVML library: gives the `cdylib` the SONAME of the real
//! library, `libnvidia-ml.so.1`, so that `ldconfig` treats a copy installed as
//! `libnvidia-ml.so.<driver version>` as the NVIDIA container toolkit's hooks treat the real
//! one (it creates the `libnvidia-ml.so.1` link and the cache entry; tests/image/check.sh
//! relies on that). It must not do anything else: the library is loaded by path everywhere
//! else, where the SONAME plays no part.
//!
//! It is a `rustc-link-arg` (this package's own targets; harmless on its tests and example),
//! not a `rustc-cdylib-link-arg`: cargo passes the latter on to every cdylib that depends on
//! this crate (cargo issue 9562), and the simulated libdcgm, which links nvml-sim as a Rust
//! library, would then be named `libnvidia-ml.so.1` too.

fn main() {
    println!("cargo:rustc-link-arg=-Wl,-soname,libnvidia-ml.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
