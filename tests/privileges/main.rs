//! Least privilege, shown on the real binary, and the container image's Dockerfile checked
//! without a container engine (docs/least-privilege.md, docs/container-image.md); the image
//! itself is built, run and checked by scripts/image.sh --test (tests/image/check.sh).
//!
//! The exporter runs under `setpriv`, either as uid/gid 65532 with no capabilities (the image's
//! user) or as uid 0 with every capability dropped (what the Helm chart runs when pod mapping
//! is on), always with `no_new_privs`. Each test reads the running exporter's
//! `/proc/<pid>/status`, so none can pass with more privilege than it claims. It loads the
//! simulated NVML library through `--nvml-lib`, the path a real node takes, from a private
//! directory that the unprivileged user can read.
//!
//! Changing user needs root. Where the tests do not run as root, or `setpriv` is missing, the
//! privilege tests fail, unless `GPU_EXPORTER_SKIP_PRIVILEGE_TESTS=1` says to skip them. The
//! Dockerfile and linking checks need neither.
//!
//! Modules: `sandbox` (running the exporter with fewer privileges), `runtime` (the privilege
//! and linking tests) and `dockerfile` (the Dockerfile's structure).
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod check;
#[path = "../common/mod.rs"]
mod common;
mod dockerfile;
mod runtime;
mod sandbox;

use sandbox::*;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, Exporter, ExporterBuilder, label_opt, series, value};
use gpu_exporter::sim::kubelet::FakeKubelet;
use gpu_exporter::sources::kubelet::client::{ContainerDevices, KubeletView, PodDevices};

const ROOT_DIR: &str = env!("CARGO_MANIFEST_DIR");
/// The image's user and group (Dockerfile `USER`), and the chart's `runAsUser` without pod
/// mapping.
const NONROOT: u32 = 65532;
/// The entrypoint the Helm chart relies on.
const ENTRYPOINT: &str = "/usr/bin/gpu-exporter";
const SKIP_VAR: &str = "GPU_EXPORTER_SKIP_PRIVILEGE_TESTS";
