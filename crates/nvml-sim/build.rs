//! Build script of the simulated NVML library: gives the `cdylib` the SONAME of the real
//! library, `libnvidia-ml.so.1`, so that `ldconfig` treats a copy installed as
//! `libnvidia-ml.so.<driver version>` as the NVIDIA container toolkit's hooks treat the real
//! one (it creates the `libnvidia-ml.so.1` link and the cache entry; tests/image/check.sh
//! relies on that). It must not do anything else: the library is loaded by path everywhere
//! else, where the SONAME plays no part.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvidia-ml.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
