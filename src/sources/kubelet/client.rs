//! The kubelet pod-resources client: `List` and `GetAllocatableResources` over the unix socket,
//! refreshed in the background.
//!
//! One long-lived tonic channel is opened lazily on the socket; every refresh makes both calls
//! with a deadline. A failed refresh keeps the last good answer (its age shows in
//! [`KubeletStatus::last_success_unix`]), is counted, logged once per distinct message, and
//! retried after an exponential backoff capped at [`MAX_BACKOFF`]. A missing socket, a kubelet
//! that restarts or one that hangs never touches the GPU series: the sampler only reads the
//! latest published [`KubeletView`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwapOption;

use crate::base::backoff::Backoff;
use tonic::transport::{Channel, Endpoint};
use tracing::{info, warn};

use super::v1::pod_resources_lister_client::PodResourcesListerClient;
use super::v1::{AllocatableResourcesRequest, ListPodResourcesRequest};

/// Longest wait between two attempts after failures.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One container's devices, as the kubelet reported them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerDevices {
    /// Container name.
    pub name: String,
    /// (resource name, device IDs) for every device-plugin resource of the container.
    pub devices: Vec<(String, Vec<String>)>,
    /// Devices held through DRA resource claims.
    pub claims: Vec<ClaimDevice>,
}

/// One device of a DRA resource claim (`ContainerResources.dynamic_resources`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimDevice {
    /// The ResourceClaim's name.
    pub claim_name: String,
    /// The ResourceClaim's namespace.
    pub claim_namespace: String,
    /// The DRA driver, e.g. `gpu.nvidia.com`.
    pub driver: String,
    /// The driver's pool (NVIDIA's driver names it after the node).
    pub pool: String,
    /// The device's name in the pool, e.g. `gpu-0`.
    pub device: String,
}

/// One pod's containers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodDevices {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// Containers, in the kubelet's order.
    pub containers: Vec<ContainerDevices>,
}

/// One successful refresh.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeletView {
    /// Every pod the kubelet listed.
    pub pods: Vec<PodDevices>,
    /// (resource name, device IDs) the kubelet can allocate; `None` when the kubelet does not
    /// serve `GetAllocatableResources` (before 1.23, or the feature gate off).
    pub allocatable: Option<Vec<(String, Vec<String>)>>,
}

/// The client's health, for self-metrics and the log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KubeletStatus {
    /// Wall time of the last successful `List` (0 before the first).
    pub last_success_unix: f64,
    /// Failed refreshes so far.
    pub errors: u64,
    /// The last error, while the last refresh failed.
    pub last_error: Option<String>,
}

/// How the client talks to the kubelet.
#[derive(Debug, Clone)]
pub struct KubeletOptions {
    /// The pod-resources socket.
    pub socket: PathBuf,
    /// Time between two refreshes.
    pub interval: Duration,
    /// Deadline of one call (connection included).
    pub timeout: Duration,
}

/// The background client and its latest answer.
pub struct PodResourcesSource {
    latest: ArcSwapOption<KubeletView>,
    status: Mutex<KubeletStatus>,
}

impl PodResourcesSource {
    /// Starts refreshing on `runtime`. The first refresh is immediate.
    pub fn spawn(opts: KubeletOptions, runtime: &tokio::runtime::Handle) -> Arc<Self> {
        let me = Arc::new(Self {
            latest: ArcSwapOption::empty(),
            status: Mutex::new(KubeletStatus::default()),
        });
        let weak = Arc::downgrade(&me);
        runtime.spawn(async move {
            let channel = channel(&opts.socket, opts.timeout);
            let mut backoff = Backoff::new(opts.interval, MAX_BACKOFF);
            let mut last_logged: Option<String> = None;
            loop {
                let Some(me) = weak.upgrade() else { return };
                let delay = match refresh(&channel, opts.timeout).await {
                    Ok(view) => {
                        if last_logged.take().is_some() || me.view().is_none() {
                            info!(
                                socket = %opts.socket.display(),
                                pods = view.pods.len(),
                                "kubelet pod-resources API answered"
                            );
                        }
                        // The state first, then the view: a tick that sees the new view
                        // also sees the source up (the other order left a window in which a
                        // tick attributed from the answer and reported the kubelet down).
                        {
                            let mut st = me.status.lock().unwrap_or_else(|p| p.into_inner());
                            st.last_success_unix = crate::base::clock::unix_now();
                            st.last_error = None;
                        }
                        // Publish only a changed answer: the join is rebuilt only when the
                        // published view changes.
                        if me.view().as_deref() != Some(&view) {
                            me.latest.store(Some(Arc::new(view)));
                        }
                        backoff.reset();
                        opts.interval
                    }
                    Err(e) => {
                        let msg = format!(
                            "kubelet pod-resources API at {}: {e}{}; pod labels keep their last \
                             known values",
                            opts.socket.display(),
                            not_a_socket(&opts.socket)
                        );
                        let d = backoff.next_delay();
                        if last_logged.as_deref() != Some(msg.as_str()) {
                            warn!(retry_in_s = d.as_secs_f64(), "{msg}");
                            last_logged = Some(msg.clone());
                        }
                        let mut st = me.status.lock().unwrap_or_else(|p| p.into_inner());
                        st.errors += 1;
                        st.last_error = Some(msg);
                        d
                    }
                };
                drop(me);
                tokio::time::sleep(delay).await;
            }
        });
        me
    }

    /// The latest successful answer, if any.
    pub fn view(&self) -> Option<Arc<KubeletView>> {
        self.latest.load_full()
    }

    /// The client's state in the form every source reports.
    pub fn health(&self) -> crate::sources::health::Health {
        let st = self.status();
        let ever = st.last_success_unix > 0.0;
        crate::sources::health::Health {
            up: ever && st.last_error.is_none(),
            last_success_unix: ever.then_some(st.last_success_unix),
            errors: st.errors,
            last_error: st.last_error,
        }
    }

    /// The client's detailed state.
    pub fn status(&self) -> KubeletStatus {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Why one refresh round failed; its text is what the log and `check` show.
#[derive(Debug, Clone, thiserror::Error)]
pub enum KubeletError {
    /// The socket path is not usable as a gRPC endpoint.
    #[error("invalid socket path {path}: {message}")]
    Socket {
        /// The socket path.
        path: String,
        /// The endpoint parser's complaint.
        message: String,
    },
    /// A call did not answer within `--pod-resources-timeout`.
    #[error("{call} did not answer within {timeout:?}")]
    Timeout {
        /// `List` or `GetAllocatableResources`.
        call: &'static str,
        /// The deadline.
        timeout: Duration,
    },
    /// A call answered with a gRPC error (described on one line, with a permission hint).
    #[error("{prefix}{status}")]
    Status {
        /// `GetAllocatableResources: ` for that call, empty for `List`.
        prefix: &'static str,
        /// The described status.
        status: String,
    },
}

/// A hint when the path is there but is no socket (a FIFO, a file, a directory): connecting
/// says only "connection refused", which sends the operator looking at the kubelet.
fn not_a_socket(path: &Path) -> String {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_socket() => format!(
            "; {} is a {}, not a unix socket: --pod-resources-kubelet-socket must name the \
             kubelet's pod-resources socket (/var/lib/kubelet/pod-resources/kubelet.sock, \
             mounted from the host)",
            path.display(),
            crate::base::bounded_read::kind(m.file_type())
        ),
        _ => String::new(),
    }
}

/// A lazy channel on the socket: it connects on first use and reconnects after a failure.
fn channel(socket: &Path, timeout: Duration) -> Result<Channel, KubeletError> {
    // The authority is ignored for unix sockets; tonic needs a syntactically valid URI.
    let uri = format!("unix://{}", socket.display());
    Endpoint::from_shared(uri)
        .map(|e| e.connect_timeout(timeout).timeout(timeout).connect_lazy())
        .map_err(|e| KubeletError::Socket {
            path: socket.display().to_string(),
            message: e.to_string(),
        })
}

/// The largest kubelet answer read (16 MiB, as dcgm-exporter since 4.8.3; gRPC's default of
/// 4 MiB is reached by nodes with thousands of pods or device IDs). A larger one is an error
/// that says so.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// One `List` (and `GetAllocatableResources`) round.
async fn refresh(
    channel: &Result<Channel, KubeletError>,
    timeout: Duration,
) -> Result<KubeletView, KubeletError> {
    let channel = channel.as_ref().map_err(Clone::clone)?;
    let mut client =
        PodResourcesListerClient::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE);
    let list = tokio::time::timeout(timeout, client.list(ListPodResourcesRequest {}))
        .await
        .map_err(|_| KubeletError::Timeout {
            call: "List",
            timeout,
        })?
        .map_err(|s| KubeletError::Status {
            prefix: "",
            status: describe(&s),
        })?
        .into_inner();
    let pods = list
        .pod_resources
        .into_iter()
        .map(|p| PodDevices {
            namespace: p.namespace,
            name: p.name,
            containers: p
                .containers
                .into_iter()
                .map(|c| ContainerDevices {
                    name: c.name,
                    devices: c
                        .devices
                        .into_iter()
                        .map(|d| (d.resource_name, d.device_ids))
                        .collect(),
                    claims: c
                        .dynamic_resources
                        .into_iter()
                        .flat_map(|r| {
                            let (name, ns) = (r.claim_name, r.claim_namespace);
                            r.claim_resources.into_iter().map(move |cr| ClaimDevice {
                                claim_name: name.clone(),
                                claim_namespace: ns.clone(),
                                driver: cr.driver_name,
                                pool: cr.pool_name,
                                device: cr.device_name,
                            })
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let allocatable = match tokio::time::timeout(
        timeout,
        client.get_allocatable_resources(AllocatableResourcesRequest {}),
    )
    .await
    {
        Ok(Ok(r)) => Some(
            r.into_inner()
                .devices
                .into_iter()
                .map(|d| (d.resource_name, d.device_ids))
                .collect(),
        ),
        // Older kubelets (or the feature gate off): allocation still works without it.
        Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => None,
        Ok(Err(s)) => {
            return Err(KubeletError::Status {
                prefix: "GetAllocatableResources: ",
                status: describe(&s),
            });
        }
        Err(_) => {
            return Err(KubeletError::Timeout {
                call: "GetAllocatableResources",
                timeout,
            });
        }
    };
    Ok(KubeletView { pods, allocatable })
}

/// Appended to a connection refused for lack of permission: what the operator has to change.
/// Connecting to a unix socket needs write permission on it (and search permission on its
/// directory); the kubelet creates both owned by root, writable by root only.
const PERMISSION_HINT: &str = "permission denied: the kubelet creates its pod-resources \
     socket owned by root and writable by root only (mode 0755, in a 0750 directory), and \
     connecting to a unix socket needs write permission on it; run the exporter as uid 0 \
     (runAsUser: 0; no capabilities are needed) for pod mapping";

/// A gRPC status as one line, with the transport error behind an `Unavailable` (each cause
/// once: a layer whose text its outer layer already shows adds nothing), and
/// [`PERMISSION_HINT`] when the socket refused us for lack of permission.
fn describe(s: &tonic::Status) -> String {
    use std::error::Error as _;
    let mut msg = format!("{:?}: {}", s.code(), s.message());
    let mut denied = false;
    let mut src = s.source();
    while let Some(e) = src {
        let text = e.to_string();
        if !text.is_empty() && !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
        denied |= e
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::PermissionDenied);
        src = e.source();
    }
    if denied {
        msg.push_str("; ");
        msg.push_str(PERMISSION_HINT);
    }
    if s.code() == tonic::Code::OutOfRange && s.message().contains("message length too large") {
        msg.push_str(&format!(
            "; the kubelet's answer is larger than the {} MiB gpu-exporter reads: no pod \
             attribution on this node",
            MAX_MESSAGE >> 20
        ));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_is_no_socket_is_named_as_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("kubelet.sock");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let hint = not_a_socket(&fifo);
        assert!(hint.contains("is a FIFO, not a unix socket"), "{hint}");
        assert!(hint.contains("--pod-resources-kubelet-socket"), "{hint}");
        assert!(not_a_socket(dir.path()).contains("is a directory"));
        // A real socket, or nothing there (the error already says so): no hint.
        let sock = dir.path().join("real.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        assert_eq!(not_a_socket(&sock), "");
        assert_eq!(not_a_socket(&dir.path().join("none")), "");
    }
}
