//! The simulated node's interface in a build without the `sim` feature (the container image):
//! the same types and calls as `node.rs`, with no simulator behind them. [`Node::open`] refuses
//! `--simulate` with a message that says why; the other types have no values, so the code paths
//! that would use them cannot run.
//!
//! It must stay free of simulator code: `scripts/check-production-binary.sh` looks for the
//! simulator's own modules and types in the production binary.

use std::path::{Path, PathBuf};

use crate::config::SimulatedNode;

/// Why the simulated node cannot run: in this build, always.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The build has no simulator.
    #[error(
        "--simulate: this build has no simulator (it was built without the `sim` cargo \
         feature, as the container image is); build with default features to simulate a node"
    )]
    NotBuilt,
}

/// No simulated node can exist in this build.
pub enum Node {}

impl Node {
    /// Refuses: this build has no simulator.
    pub fn open(_scenario: &str, _seed: u64, _nvml_lib: Option<&Path>) -> Result<Self, SimError> {
        Err(SimError::NotBuilt)
    }

    /// Never called: there is no node.
    pub fn lib_path(&self) -> PathBuf {
        match *self {}
    }

    /// Never called: there is no node.
    pub fn dcgm_lib_path(&self) -> Option<PathBuf> {
        match *self {}
    }
}

/// No simulated cluster can exist in this build.
pub enum Cluster {}

impl Cluster {
    /// Never called: there is no node to start it for.
    pub fn start(node: &Node, _rt: &tokio::runtime::Runtime) -> Result<Self, SimError> {
        match *node {}
    }

    /// Never called: there is no cluster.
    pub fn site(&self, _node: &Node) -> SimulatedNode {
        match *self {}
    }

    /// Never called: there is no cluster.
    pub fn client(&self) -> kube::Client {
        match *self {}
    }
}
