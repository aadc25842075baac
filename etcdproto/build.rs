//! Compiles the etcd API subset in `proto/` into Rust with `protox`, a
//! protobuf compiler written in Rust, so that building locklab needs no
//! `protoc` on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/kv.proto", "proto/rpc.proto", "proto/v3lock.proto"];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
