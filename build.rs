//! Compiles `proto/podresources.proto` (the kubelet pod-resources API subset) into Rust with
//! protox, a pure-Rust protobuf compiler, so no system `protoc` is needed. The gRPC server
//! stubs are generated only with the `sim` feature (the simulated kubelet).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/podresources.proto");
    let files = protox::compile(["proto/podresources.proto"], ["proto"])?;
    // The server side is only the simulated kubelet's (feature `sim`); the production build
    // carries the client alone.
    println!("cargo:rerun-if-env-changed=CARGO_FEATURE_SIM");
    let sim = std::env::var_os("CARGO_FEATURE_SIM").is_some();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(sim)
        .compile_fds(files)?;
    Ok(())
}
