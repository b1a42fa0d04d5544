//! Compiles `proto/podresources.proto` (the kubelet pod-resources API subset) into Rust with
//! protox, a pure-Rust protobuf compiler, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/podresources.proto");
    let files = protox::compile(["proto/podresources.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(files)?;
    Ok(())
}
