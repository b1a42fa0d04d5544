//! A pod-resources server on a unix socket: the simulated kubelet of `--simulate` and the
//! tests.
//!
//! It serves `List` and `GetAllocatableResources` from a [`KubeletView`] that can be replaced
//! while it runs, with an optional delay before each answer (a slow kubelet). It is a real
//! tonic server on a real socket, so the client under test goes through the same transport as
//! against a kubelet.
//!
//! Simulator only (behind the `sim` feature); it must not share state with the client other
//! than through the socket.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use crate::sources::kubelet::client::KubeletView;
use crate::sources::kubelet::v1;
use crate::sources::kubelet::v1::pod_resources_lister_server::{
    PodResourcesLister, PodResourcesListerServer,
};

#[derive(Default)]
struct State {
    view: KubeletView,
    delay: Duration,
    lists: u64,
}

#[derive(Clone, Default)]
struct Service(Arc<Mutex<State>>);

impl Service {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[tonic::async_trait]
impl PodResourcesLister for Service {
    async fn list(
        &self,
        _: Request<v1::ListPodResourcesRequest>,
    ) -> Result<Response<v1::ListPodResourcesResponse>, Status> {
        let (view, delay) = {
            let mut st = self.lock();
            st.lists += 1;
            (st.view.clone(), st.delay)
        };
        tokio::time::sleep(delay).await;
        Ok(Response::new(v1::ListPodResourcesResponse {
            pod_resources: view
                .pods
                .into_iter()
                .map(|p| v1::PodResources {
                    name: p.name,
                    namespace: p.namespace,
                    containers: p
                        .containers
                        .into_iter()
                        .map(|c| v1::ContainerResources {
                            name: c.name,
                            devices: c
                                .devices
                                .into_iter()
                                .map(|(resource_name, device_ids)| v1::ContainerDevices {
                                    resource_name,
                                    device_ids,
                                })
                                .collect(),
                            dynamic_resources: c
                                .claims
                                .into_iter()
                                .map(|d| v1::DynamicResource {
                                    claim_name: d.claim_name,
                                    claim_namespace: d.claim_namespace,
                                    claim_resources: vec![v1::ClaimResource {
                                        driver_name: d.driver,
                                        pool_name: d.pool,
                                        device_name: d.device,
                                    }],
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
        }))
    }

    async fn get_allocatable_resources(
        &self,
        _: Request<v1::AllocatableResourcesRequest>,
    ) -> Result<Response<v1::AllocatableResourcesResponse>, Status> {
        let (view, delay) = {
            let st = self.lock();
            (st.view.clone(), st.delay)
        };
        tokio::time::sleep(delay).await;
        let Some(devices) = view.allocatable else {
            return Err(Status::unimplemented("GetAllocatableResources"));
        };
        Ok(Response::new(v1::AllocatableResourcesResponse {
            devices: devices
                .into_iter()
                .map(|(resource_name, device_ids)| v1::ContainerDevices {
                    resource_name,
                    device_ids,
                })
                .collect(),
        }))
    }
}

/// A handle that replaces what a [`FakeKubelet`] answers, for a task that outlives a borrow of
/// it (the scenario's pod timeline).
#[derive(Clone)]
pub struct KubeletViews(Service);

impl KubeletViews {
    /// Replaces what `List` and `GetAllocatableResources` answer.
    pub fn set(&self, view: KubeletView) {
        self.0.lock().view = view;
    }
}

/// A running pod-resources server. Dropping it stops serving and removes the socket.
pub struct FakeKubelet {
    socket: PathBuf,
    service: Service,
    stop: Option<oneshot::Sender<()>>,
}

impl FakeKubelet {
    /// Binds `socket` (removing a stale file first) and serves `view` on the current runtime.
    pub async fn start(socket: &Path, view: KubeletView) -> std::io::Result<Self> {
        let service = Service::default();
        service.lock().view = view;
        let mut me = Self {
            socket: socket.to_path_buf(),
            service,
            stop: None,
        };
        me.serve()?;
        Ok(me)
    }

    fn serve(&mut self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.socket) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(&self.socket)?;
        let (tx, rx) = oneshot::channel();
        let svc = PodResourcesListerServer::new(self.service.clone());
        tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("simulated kubelet stopped: {e}");
            }
        });
        self.stop = Some(tx);
        Ok(())
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What the kubelet lists now.
    pub fn view(&self) -> KubeletView {
        self.service.lock().view.clone()
    }

    /// Replaces what `List` and `GetAllocatableResources` answer.
    pub fn set_view(&self, view: KubeletView) {
        self.service.lock().view = view;
    }

    /// A handle that replaces the view from elsewhere (see [`KubeletViews`]).
    pub fn views(&self) -> KubeletViews {
        KubeletViews(self.service.clone())
    }

    /// Makes every answer wait `delay` first.
    pub fn set_delay(&self, delay: Duration) {
        self.service.lock().delay = delay;
    }

    /// `List` calls served so far.
    pub fn lists(&self) -> u64 {
        self.service.lock().lists
    }

    /// Stops serving and removes the socket, as a kubelet does when it stops.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Serves again on the same path (a restarted kubelet), with the current view.
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.stop();
        self.serve()
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        self.stop();
    }
}
