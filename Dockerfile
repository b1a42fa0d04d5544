# syntax=docker/dockerfile:1
#
# The gpu-exporter container image (docs/container-image.md).
#
# Stage "builder" compiles the release binary on the official Rust image; the runtime stage is
# distroless (glibc and libgcc, no shell, no package manager) and runs as the unprivileged user
# 65532. NVML (libnvidia-ml.so.1) and the /dev/nvidia* device nodes are NOT in the image: the
# NVIDIA container toolkit injects them when the container starts (NVIDIA_VISIBLE_DEVICES and
# NVIDIA_DRIVER_CAPABILITIES below ask it to).
#
# Build it with `bash scripts/image.sh` (buildah) or `docker build .`. CI builds this file with
# buildah on local stand-ins for the two bases (Debian 12 roots it bootstraps itself, as no
# registry is reachable there), runs the image and checks it (tests/image/check.sh);
# tests/privileges/ checks its structure (COPY sources, the user, the entrypoint, the Rust
# version). The release build uses the bases below unchanged.

# At least Cargo.toml's rust-version.
ARG RUST_VERSION=1.90
# The two bases, as build arguments so that a build without registry access can name local
# equivalents: a Debian 12 (bookworm) Rust toolchain at least RUST_VERSION, and a Debian 12
# root with glibc, libgcc and CA certificates. Builder and runtime must be the same Debian
# release: the binary needs the builder's glibc.
ARG BUILDER_IMAGE=docker.io/library/rust:${RUST_VERSION}-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot
# The DCGM variant only (`--target dcgm`, docs/container-image.md "The DCGM variant"): an image
# that carries DCGM's client library, libdcgm.so.4 (NVIDIA's DCGM image, or any image with the
# datacenter-gpu-manager-4-core package installed), and the directory it sits in. The default
# build does not use it (unused stages are skipped) and carries no DCGM.
ARG DCGM_IMAGE=nvcr.io/nvidia/cloud-native/dcgm:4.5.3-1-ubuntu22.04
ARG DCGM_LIB_DIR=/usr/lib/x86_64-linux-gnu

FROM ${BUILDER_IMAGE} AS builder
WORKDIR /src
# The shipped binary carries no debug info (Cargo.toml's release profile keeps some for
# profiling); its symbols stay, so a backtrace still names functions.
# Relative relocations are packed (DT_RELR, `-z pack-relative-relocs`): the loader reads a few
# kilobytes of them at start instead of about 0.9 MB of RELA entries, which takes about 1.6 MB
# off the process's resident memory (BENCHMARKS.md, issue 27). It needs glibc 2.36 or later at
# run time, which the runtime image has; tests/image/check.sh fails if the binary lacks it.
ENV CARGO_PROFILE_RELEASE_DEBUG=0 \
    CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    RUSTFLAGS="-C link-arg=-Wl,-z,pack-relative-relocs"

# Dependencies first, in their own layer: editing the sources does not download them again.
# Cargo needs every file the manifests name to read the workspace: the declared benches and
# crate roots for the other members (empty stubs: the simulated NVML and DCGM libraries and the
# stand-in host engine are not built here; the DCGM ABI crate is, from its sources below).
COPY Cargo.toml Cargo.lock ./
COPY crates/nvml-sim/Cargo.toml crates/nvml-sim/Cargo.toml
COPY crates/dcgm-abi/Cargo.toml crates/dcgm-abi/Cargo.toml
COPY crates/dcgm-sim/Cargo.toml crates/dcgm-sim/Cargo.toml
COPY benches benches
RUN mkdir -p src crates/nvml-sim/src crates/dcgm-abi/src crates/dcgm-sim/src/bin \
 && touch src/lib.rs src/main.rs crates/nvml-sim/src/lib.rs crates/dcgm-abi/src/lib.rs \
    crates/dcgm-sim/src/lib.rs crates/dcgm-sim/src/bin/hostengine.rs \
 && cargo fetch --locked

# What the exporter's build reads: build.rs compiles proto/ with protox (pure Rust, no protoc),
# and src/config/cli.rs embeds counters/default-counters.csv.
COPY build.rs ./
COPY proto proto
COPY counters counters
COPY crates/dcgm-abi/src crates/dcgm-abi/src
COPY src src
# The binary is moved out of target/ and target/ removed in the same step, so that the layer
# holds one file instead of about 1 GB of build output: a builder that keeps its layer cache
# (buildah --layers, docker's build cache) would otherwise keep a copy of target/ per build.
RUN cargo build --release --locked --offline --no-default-features -p gpu-exporter --bin gpu-exporter \
 && mv target/release/gpu-exporter /src/gpu-exporter \
 && rm -rf target

FROM ${RUNTIME_IMAGE} AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="gpu-exporter" \
      org.opencontainers.image.description="Prometheus exporter for NVIDIA GPUs on Kubernetes, drop-in compatible with dcgm-exporter" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/gpu-exporter/gpu-exporter" \
      org.opencontainers.image.documentation="https://github.com/gpu-exporter/gpu-exporter/blob/main/docs/container-image.md"

COPY --from=builder /src/gpu-exporter /usr/bin/gpu-exporter
# The counters files at dcgm-exporter's paths: -f defaults to default-counters.csv, and the GPU
# Operator's DaemonSet points DCGM_EXPORTER_COLLECTORS at dcp-metrics-included.csv.
COPY counters/default-counters.csv counters/dcp-metrics-included.csv counters/recommended.csv counters/dcgm-4.8.2-default-counters.csv counters/dcgm-4.8.2-dcp-metrics-included.csv counters/dcgm-4.9-default-counters.csv counters/dcgm-4.9-dcp-metrics-included.csv counters/dcgm-4.10-default-counters.csv counters/dcgm-4.10-dcp-metrics-included.csv /etc/dcgm-exporter/

# NVML needs only the "utility" driver capability: the toolkit then mounts libnvidia-ml.so.1
# and creates /dev/nvidiactl and /dev/nvidia<N> for the visible GPUs.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility
EXPOSE 9400
# Numeric, so that Kubernetes' runAsNonRoot can verify it. Pod mapping (-k) needs uid 0 to
# connect to the kubelet's root-owned socket; the Helm chart sets runAsUser: 0 for that
# (docs/least-privilege.md).
USER 65532:65532
ENTRYPOINT ["/usr/bin/gpu-exporter"]

# The DCGM variant: the same image plus libdcgm.so.4, for profiling (DCGM_FI_PROF_*) on GPUs
# without NVML's GPM (A100, A30, A10, L4, L40S, T4, V100), through a standalone nv-hostengine
# (`-r`, remote mode: no extra privileges) or an embedded one (`--dcgm-mode embedded`, which
# also needs DCGM's profiling module and SYS_ADMIN). Only the client library is copied: it is
# what the exporter loads (through the dynamic loader, from a directory the loader searches).
#   buildah build --target dcgm --build-arg DCGM_IMAGE=... -t gpu-exporter:dcgm .
FROM ${DCGM_IMAGE} AS dcgm-libs

FROM runtime AS dcgm-files
ARG DCGM_LIB_DIR
COPY --from=dcgm-libs ${DCGM_LIB_DIR}/libdcgm.so.4 ${DCGM_LIB_DIR}/libdcgm.so.4

# The target itself is a stage without instructions, as the default image's is: buildah (1.28)
# applies labels given on its command line (`--label`, which scripts/image.sh uses for the
# revision) to such a stage, but not when a target's last step comes from its layer cache.
FROM dcgm-files AS dcgm

# The default image (the last stage): the runtime stage as it is, no DCGM.
FROM runtime
