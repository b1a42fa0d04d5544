//! A reflector of the NVIDIA DRA driver's ResourceSlices: (driver, pool, device) → GPU or MIG.
//!
//! With Dynamic Resource Allocation the kubelet reports a container's devices as
//! (driver, pool, device name) triples, not as GPU UUIDs. The driver publishes what each name
//! is in ResourceSlices. [`DraSource::spawn`] watches the slices of this node (field selectors
//! `spec.nodeName=<node>` and `spec.driver=gpu.nvidia.com`) and publishes an immutable
//! [`DraIndex`] after every change.
//!
//! The `resource.k8s.io` version differs between clusters (`v1beta1` in 1.32, `v1beta2` in
//! 1.33, `v1` from 1.34), so the slices are read untyped ([`DynamicObject`]) and the version
//! is discovered first (`GET /apis/resource.k8s.io`), preferring `v1`, then `v1beta2`, then
//! `v1beta1`. Discovery is retried with a backoff while it fails, and redone when the version
//! in use stops being served (404).
//!
//! Device shapes: `spec.devices[].{name, attributes}` in `v1` and `v1beta2`,
//! `spec.devices[].{name, basic: {attributes}}` in `v1beta1`; both are accepted in any
//! version. Attributes are `{"<name>": {"string"|"int"|"version"|"bool": value}}`, with names
//! possibly qualified by a domain (`gpu.nvidia.com/uuid`), which is ignored. NVIDIA's driver
//! publishes `type` (`gpu` or `mig`), `uuid`, and for MIG devices `parentUUID` and `profile`.
//! When a pool's slices carry different `spec.pool.generation`s, only the newest generation
//! counts, as for the scheduler. The index is rebuilt from the whole set after every change
//! and after every re-list, so a set replaced by new slices of the same generation (the driver
//! re-created them, or a re-list after an expired watch found new objects) takes effect at
//! once: nothing is cached by generation or by slice.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::watcher::{self, Event};
use serde_json::Value;

use crate::base::backoff::Backoff;
use crate::base::cause_log::cause;

use super::api_error::{
    access_hint, api_status, describe_kube_error, describe_watch_error, failure_kind, refused,
    watch_phase,
};
use super::failure_log::FailureLog;
use super::reflector::{LatestIndex, Recovery, Reflector};

/// The name of NVIDIA's GPU DRA driver (`spec.driver` of its ResourceSlices).
pub const NVIDIA_GPU_DRIVER: &str = "gpu.nvidia.com";
/// The API group of ResourceSlices.
pub const RESOURCE_GROUP: &str = "resource.k8s.io";
/// The `resource.k8s.io` versions understood, most preferred first.
pub const SUPPORTED_VERSIONS: &[&str] = &["v1", "v1beta2", "v1beta1"];

/// First wait after a failed discovery; it doubles up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_secs(1);
/// Longest wait between two discoveries.
const RETRY_MAX: Duration = Duration::from_secs(60);

/// What a DRA device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraKind {
    /// A whole GPU (`type: gpu`).
    Gpu,
    /// A MIG device (`type: mig`).
    Mig,
}

/// One device of the NVIDIA DRA driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraDevice {
    /// GPU or MIG device.
    pub kind: DraKind,
    /// The device's UUID (`GPU-…` or `MIG-…`).
    pub uuid: String,
    /// For a MIG device, the UUID of its GPU.
    pub parent_uuid: Option<String>,
    /// For a MIG device, its profile, e.g. `1g.10gb`.
    pub profile: Option<String>,
}

/// An immutable index of the devices in the ResourceSlices known at one moment.
#[derive(Debug, Default)]
pub struct DraIndex {
    /// driver → pool → device name → device.
    devices: HashMap<String, HashMap<String, HashMap<String, DraDevice>>>,
    len: usize,
}

impl DraIndex {
    /// The device `device` of pool `pool` of driver `driver`.
    pub fn get(&self, driver: &str, pool: &str, device: &str) -> Option<&DraDevice> {
        self.devices.get(driver)?.get(pool)?.get(device)
    }

    /// Every device as (driver, pool, device name, device), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &str, &DraDevice)> {
        self.devices.iter().flat_map(|(driver, pools)| {
            pools.iter().flat_map(move |(pool, devices)| {
                devices
                    .iter()
                    .map(move |(name, d)| (driver.as_str(), pool.as_str(), name.as_str(), d))
            })
        })
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no device is known.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Builds an index from ResourceSlice objects (JSON, any supported version). Slices of
    /// other drivers than [`NVIDIA_GPU_DRIVER`], devices without `type` `gpu`/`mig` or without
    /// `uuid`, and slices of an older pool generation are skipped. Nothing is kept from one
    /// index to the next: a set of slices replaced by new ones of the same generation (the
    /// driver restarted, the slices re-created) gives the new devices at once. While old and
    /// new slices of one generation both name a device (the new ones created before the old
    /// ones are deleted), the slice created last wins (then the last by name), whatever order
    /// the slices come in.
    pub fn from_slices(slices: impl IntoIterator<Item = Value>) -> Self {
        let mut slices: Vec<Value> = slices
            .into_iter()
            .filter(|s| spec_str(s, "driver") == Some(NVIDIA_GPU_DRIVER))
            .collect();
        // RFC 3339 in UTC (`2026-01-01T00:00:00Z`), as the API server writes it: ordered as text.
        let created = |s: &Value| {
            let meta = s.get("metadata");
            let at = |k: &str| {
                meta.and_then(|m| m.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (at("creationTimestamp"), at("name"))
        };
        slices.sort_by_cached_key(created);
        let pool_of = |s: &Value| -> (String, i64) {
            let pool = s.get("spec").and_then(|sp| sp.get("pool"));
            let name = pool
                .and_then(|p| p.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let generation = pool
                .and_then(|p| p.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            (name, generation)
        };
        let mut newest: HashMap<String, i64> = HashMap::new();
        for s in &slices {
            let (pool, generation) = pool_of(s);
            let g = newest.entry(pool).or_insert(generation);
            *g = (*g).max(generation);
        }
        let mut index = Self::default();
        for s in &slices {
            let (pool, generation) = pool_of(s);
            if newest.get(&pool).is_some_and(|g| generation < *g) {
                continue;
            }
            let devices = s
                .get("spec")
                .and_then(|sp| sp.get("devices"))
                .and_then(Value::as_array);
            for d in devices.into_iter().flatten() {
                let Some((name, device)) = parse_device(d) else {
                    continue;
                };
                let previous = index
                    .devices
                    .entry(NVIDIA_GPU_DRIVER.to_owned())
                    .or_default()
                    .entry(pool.clone())
                    .or_default()
                    .insert(name, device);
                if previous.is_none() {
                    index.len += 1;
                }
            }
        }
        index
    }
}

fn spec_str<'a>(slice: &'a Value, key: &str) -> Option<&'a str> {
    slice.get("spec")?.get(key)?.as_str()
}

/// An attribute's value as text (`string`, `version`, `int` or `bool`).
fn attribute_text(v: &Value) -> Option<String> {
    if let Some(s) = v
        .get("string")
        .or_else(|| v.get("version"))
        .and_then(Value::as_str)
    {
        return Some(s.to_owned());
    }
    if let Some(i) = v.get("int").and_then(Value::as_i64) {
        return Some(i.to_string());
    }
    v.get("bool")
        .and_then(Value::as_bool)
        .map(|b| b.to_string())
}

/// One `spec.devices[]` entry → (name, device), for `gpu` and `mig` devices with a UUID.
fn parse_device(d: &Value) -> Option<(String, DraDevice)> {
    let name = d.get("name")?.as_str().filter(|s| !s.is_empty())?;
    let attributes = d
        .get("attributes")
        .or_else(|| d.get("basic").and_then(|b| b.get("attributes")))?
        .as_object()?;
    let mut attrs: HashMap<&str, String> = HashMap::new();
    for (key, value) in attributes {
        let short = key.rsplit_once('/').map_or(key.as_str(), |(_, n)| n);
        if let Some(text) = attribute_text(value) {
            attrs.entry(short).or_insert(text);
        }
    }
    let kind = match attrs.get("type").map(String::as_str) {
        Some("gpu") => DraKind::Gpu,
        Some("mig") => DraKind::Mig,
        _ => return None,
    };
    let uuid = attrs.remove("uuid").filter(|u| !u.is_empty())?;
    let (parent_uuid, profile) = match kind {
        DraKind::Gpu => (None, None),
        DraKind::Mig => (attrs.remove("parentUUID"), attrs.remove("profile")),
    };
    Some((
        name.to_owned(),
        DraDevice {
            kind,
            uuid,
            parent_uuid,
            profile,
        },
    ))
}

/// The most preferred of [`SUPPORTED_VERSIONS`] among the served versions.
pub fn pick_version<'a>(served: impl IntoIterator<Item = &'a str>) -> Option<&'static str> {
    let served: Vec<&str> = served.into_iter().collect();
    SUPPORTED_VERSIONS
        .iter()
        .copied()
        .find(|v| served.contains(v))
}

/// The background ResourceSlice reflector and its latest [`DraIndex`] (discovery failures
/// count as errors in its status).
pub type DraSource = Reflector<DraIndex>;

impl Reflector<DraIndex> {
    /// Starts discovery and then the reflector on `runtime` (a tokio handle).
    ///
    /// `node_name` restricts it to the slices of one node (field selector
    /// `spec.nodeName=<node>`); `None` watches the slices of every node (logged as a
    /// warning). The task stops when the returned value is dropped or the runtime shuts down;
    /// API errors are counted, logged and retried, never fatal.
    pub fn spawn(
        client: kube::Client,
        node_name: Option<String>,
        runtime: &tokio::runtime::Handle,
    ) -> Arc<Self> {
        Self::start(runtime, |shared| run_dra(client, node_name, shared))
    }
}

async fn run_dra(client: kube::Client, node: Option<String>, shared: Arc<LatestIndex<DraIndex>>) {
    if node.is_none() {
        tracing::warn!(
            "NODE_NAME is unset: watching the ResourceSlices of every node in the cluster; set \
             it from the downward API (fieldRef spec.nodeName)"
        );
    }
    let mut backoff = Backoff::new(RETRY_MIN, RETRY_MAX);
    let mut failures = FailureLog::default();
    loop {
        match discover(&client).await {
            Ok(version) => {
                failures.ok();
                tracing::info!(
                    "watching ResourceSlices of {NVIDIA_GPU_DRIVER} through {RESOURCE_GROUP}/{version}"
                );
                if watch_slices(&client, version, node.as_deref(), &shared).await {
                    backoff.reset();
                }
                tokio::time::sleep(backoff.next_delay()).await;
            }
            Err(e) => {
                let delay = backoff.next_delay();
                let msg = e.to_string();
                // `discovering resource.k8s.io: <cause>: <detail>`.
                failures.note(
                    cause(&msg, 2),
                    &format!("{msg}; retrying in {:.1} s", delay.as_secs_f64()),
                );
                let denied = matches!(&e, DiscoveryError::Api(kube::Error::Api(s)) if matches!(s.code, 401 | 403));
                shared.failed(msg, denied);
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Why the `resource.k8s.io` version could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The discovery request could not be built.
    #[error("discovering {group}: {e}", group = RESOURCE_GROUP, e = .0)]
    Request(#[source] axum::http::Error),
    /// The API server answered with an error, or not at all.
    #[error("discovering {group}: {}{}", describe_kube_error(.0), dra_hint(.0), group = RESOURCE_GROUP)]
    Api(#[source] kube::Error),
    /// None of the versions we read is served.
    #[error(
        "discovering {}: none of {} is served (the server offers [{}])",
        RESOURCE_GROUP,
        SUPPORTED_VERSIONS.join(", "),
        served.join(", ")
    )]
    NoVersion {
        /// The versions the server offers.
        served: Vec<String>,
    },
}

/// What a 404 on the group means for the operator.
fn dra_hint(e: &kube::Error) -> &'static str {
    if matches!(e, kube::Error::Api(s) if s.code == 404) {
        "; the cluster does not serve Dynamic Resource Allocation (served by default from \
         Kubernetes 1.34; 1.32 and 1.33 need the DynamicResourceAllocation feature gate and the \
         beta API enabled)"
    } else {
        ""
    }
}

/// `GET /apis/resource.k8s.io` → the version to use.
async fn discover(client: &kube::Client) -> Result<&'static str, DiscoveryError> {
    let path = format!("/apis/{RESOURCE_GROUP}");
    let request = axum::http::Request::get(path.as_str())
        .body(Vec::new())
        .map_err(DiscoveryError::Request)?;
    let group: Value = client.request(request).await.map_err(DiscoveryError::Api)?;
    let served: Vec<&str> = group
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("version").and_then(Value::as_str))
        .collect();
    pick_version(served.iter().copied()).ok_or_else(|| DiscoveryError::NoVersion {
        served: served.iter().map(|s| (*s).to_owned()).collect(),
    })
}

/// Watches the slices through `version` until that version is no longer served (404).
/// Returns `true` when a complete list was received on the way.
async fn watch_slices(
    client: &kube::Client,
    version: &str,
    node: Option<&str>,
    shared: &LatestIndex<DraIndex>,
) -> bool {
    let api = slices_api(client, version);
    let (fields, scope) = selection(node);
    let cfg = watcher::Config::default().fields(&fields);
    let probe = ListParams::default().fields(&fields).limit(1);
    // Paced by `Recovery` (retry delay and probe), not by kube's backoff (see `reflector`).
    let mut events = pin!(watcher::watcher(api.clone(), cfg));
    let mut recovery = Recovery::new();
    let mut failures = FailureLog::default();
    let mut seen = SeenSlices::default();
    while let Some(event) = recovery.next(&mut events, &api, &probe, shared).await {
        match event {
            Ok(event) => seen.take(event, shared, &mut failures, &scope),
            Err(err) => {
                if watch_failed(&err, version, &scope, &mut failures, shared) {
                    return seen.synced;
                }
            }
        }
    }
    seen.synced
}

/// The ResourceSlices of `resource.k8s.io` `version`, cluster-wide.
fn slices_api(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: RESOURCE_GROUP.to_owned(),
        version: version.to_owned(),
        api_version: format!("{RESOURCE_GROUP}/{version}"),
        kind: "ResourceSlice".to_owned(),
        plural: "resourceslices".to_owned(),
    };
    Api::all_with(client.clone(), &resource)
}

/// The field selector of the NVIDIA GPU driver's slices on `node` (all nodes when `None`),
/// and the scope as log lines say it.
fn selection(node: Option<&str>) -> (String, String) {
    match node {
        Some(n) => (
            format!("spec.nodeName={n},spec.driver={NVIDIA_GPU_DRIVER}"),
            format!("on node {n}"),
        ),
        None => (
            format!("spec.driver={NVIDIA_GPU_DRIVER}"),
            "on all nodes".to_owned(),
        ),
    }
}

/// The slices a watch has seen, by name: those in use, the list being received, and whether
/// a complete list has been.
#[derive(Default)]
struct SeenSlices {
    slices: HashMap<String, Value>,
    initial: Option<HashMap<String, Value>>,
    synced: bool,
}

impl SeenSlices {
    /// Takes one event of the watch: a complete list or a change that alters the slices
    /// publishes their index in `shared`, anything else marks it healthy; a complete list
    /// also ends a run of `failures` and is logged (its `scope` named).
    fn take(
        &mut self,
        event: Event<DynamicObject>,
        shared: &LatestIndex<DraIndex>,
        failures: &mut FailureLog,
        scope: &str,
    ) {
        let key = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
        let value = |o: DynamicObject| serde_json::to_value(o).unwrap_or(Value::Null);
        match event {
            Event::Init => self.initial = Some(HashMap::new()),
            Event::InitApply(o) => {
                if let Some(buf) = self.initial.as_mut() {
                    buf.insert(key(&o), value(o));
                }
            }
            Event::InitDone => {
                let listed = self.initial.take().unwrap_or_default();
                if listed != self.slices || !self.synced {
                    self.slices = listed;
                    self.publish(shared, true);
                } else {
                    shared.ok(true);
                }
                failures.ok();
                self.synced = true;
                tracing::info!(
                    slices = self.slices.len(),
                    devices = shared.load().len(),
                    "ResourceSlice reflector synced ({scope})"
                );
            }
            Event::Apply(o) => {
                let k = key(&o);
                let v = value(o);
                if self.slices.get(&k) != Some(&v) {
                    self.slices.insert(k, v);
                    self.publish(shared, false);
                } else {
                    shared.ok(false);
                }
            }
            Event::Delete(o) => {
                if self.slices.remove(&key(&o)).is_some() {
                    self.publish(shared, false);
                } else {
                    shared.ok(false);
                }
            }
        }
    }

    /// Publishes the index of the slices in use (`synced`: after a complete list).
    fn publish(&self, shared: &LatestIndex<DraIndex>, synced: bool) {
        let index = DraIndex::from_slices(self.slices.values().cloned());
        let n = index.len();
        shared.publish(index, n, synced);
    }
}

/// Reports a failed watch of `version`'s slices on `scope`: logged through `failures` with
/// what it means meanwhile, and recorded in `shared`. Returns whether the version is no
/// longer served (404), which ends the watch.
fn watch_failed(
    err: &watcher::Error,
    version: &str,
    scope: &str,
    failures: &mut FailureLog,
    shared: &LatestIndex<DraIndex>,
) -> bool {
    let code = api_status(err).map(|s| s.code);
    let mut msg = format!(
        "{} ResourceSlices ({RESOURCE_GROUP}/{version}) {scope}: {}",
        watch_phase(err),
        describe_watch_error(err)
    );
    msg.push_str(access_hint(err, "resourceslices"));
    let meanwhile = if refused(err) {
        "; retrying with backoff, and meanwhile the DRA claims on devices it has not \
         listed are not attributed"
    } else {
        "; retrying with backoff, DRA devices keep their last value"
    };
    failures.note(failure_kind(err), &format!("{msg}{meanwhile}"));
    shared.failed(msg, refused(err));
    code == Some(404)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_errors_name_the_group_and_what_to_do() {
        let status = |code: u16, reason: &str| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: reason.into(),
                message: "the server could not find the requested resource".into(),
                ..Default::default()
            }))
        };
        let e = DiscoveryError::Api(status(404, "NotFound")).to_string();
        assert!(
            e.starts_with("discovering resource.k8s.io: 404 NotFound"),
            "{e}"
        );
        assert!(
            e.contains("does not serve Dynamic Resource Allocation"),
            "{e}"
        );
        let e = DiscoveryError::Api(status(403, "Forbidden")).to_string();
        assert!(
            e.starts_with("discovering resource.k8s.io: 403 Forbidden"),
            "{e}"
        );
        assert!(!e.contains("Dynamic Resource Allocation"), "{e}");
        let e = DiscoveryError::NoVersion {
            served: vec!["v1alpha3".into()],
        }
        .to_string();
        assert_eq!(
            e,
            "discovering resource.k8s.io: none of v1, v1beta2, v1beta1 is served (the server \
             offers [v1alpha3])"
        );
    }

    fn gpu_v1(name: &str, uuid: &str) -> Value {
        json!({"name": name, "attributes": {
            "type": {"string": "gpu"}, "uuid": {"string": uuid}, "index": {"int": 0},
            "driverVersion": {"version": "570.0.0"}
        }})
    }

    fn mig_v1beta1(name: &str, uuid: &str, parent: &str, profile: &str) -> Value {
        json!({"name": name, "basic": {"attributes": {
            "gpu.nvidia.com/type": {"string": "mig"}, "gpu.nvidia.com/uuid": {"string": uuid},
            "parentUUID": {"string": parent}, "profile": {"string": profile}
        }}})
    }

    fn slice(driver: &str, pool: &str, generation: i64, devices: Vec<Value>) -> Value {
        json!({
            "metadata": {"name": format!("{pool}-{driver}-{generation}")},
            "spec": {"driver": driver, "nodeName": pool,
                     "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
                     "devices": devices}
        })
    }

    #[test]
    fn parses_both_device_shapes() {
        let idx = DraIndex::from_slices([slice(
            NVIDIA_GPU_DRIVER,
            "node-a",
            1,
            vec![
                gpu_v1("gpu-0", "GPU-aaa"),
                mig_v1beta1("gpu-1-mig-1g10gb-0", "MIG-bbb", "GPU-ccc", "1g.10gb"),
            ],
        )]);
        assert_eq!(idx.len(), 2);
        assert_eq!(
            idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-0"),
            Some(&DraDevice {
                kind: DraKind::Gpu,
                uuid: "GPU-aaa".into(),
                parent_uuid: None,
                profile: None,
            })
        );
        assert_eq!(
            idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-1-mig-1g10gb-0"),
            Some(&DraDevice {
                kind: DraKind::Mig,
                uuid: "MIG-bbb".into(),
                parent_uuid: Some("GPU-ccc".into()),
                profile: Some("1g.10gb".into()),
            })
        );
        assert!(idx.get(NVIDIA_GPU_DRIVER, "node-b", "gpu-0").is_none());
        assert!(idx.get("other", "node-a", "gpu-0").is_none());
        assert_eq!(idx.iter().count(), 2);
    }

    #[test]
    fn skips_other_drivers_types_and_devices_without_uuid() {
        let idx = DraIndex::from_slices([
            slice(
                "compute-domain.nvidia.com",
                "node-a",
                1,
                vec![gpu_v1("gpu-0", "GPU-x")],
            ),
            slice(
                NVIDIA_GPU_DRIVER,
                "node-a",
                1,
                vec![
                    json!({"name": "ch-0", "attributes": {"type": {"string": "channel"},
                                                          "uuid": {"string": "x"}}}),
                    json!({"name": "gpu-9", "attributes": {"type": {"string": "gpu"}}}),
                    json!({"name": "bare"}),
                    json!({"attributes": {"type": {"string": "gpu"}, "uuid": {"string": "y"}}}),
                ],
            ),
        ]);
        assert!(idx.is_empty(), "{idx:?}");
        assert!(DraIndex::default().is_empty());
    }

    #[test]
    fn older_pool_generations_are_ignored() {
        let idx = DraIndex::from_slices([
            slice(
                NVIDIA_GPU_DRIVER,
                "node-a",
                1,
                vec![gpu_v1("gpu-0", "GPU-old")],
            ),
            slice(
                NVIDIA_GPU_DRIVER,
                "node-a",
                2,
                vec![gpu_v1("gpu-1", "GPU-new")],
            ),
        ]);
        assert_eq!(idx.len(), 1);
        assert!(idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-0").is_none());
        assert_eq!(
            idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-1")
                .map(|d| d.uuid.as_str()),
            Some("GPU-new")
        );
    }

    #[test]
    fn a_device_named_by_old_and_new_slices_of_one_generation_is_the_newest_slices() {
        let stamped = |name: &str, created: &str, uuid: &str| {
            let mut s = slice(NVIDIA_GPU_DRIVER, "node-a", 3, vec![gpu_v1("gpu-0", uuid)]);
            s["metadata"] = json!({"name": name, "creationTimestamp": created});
            s
        };
        let old = stamped("node-a-gpu-x7k2p", "2026-11-30T10:00:00Z", "GPU-old");
        let new = stamped("node-a-gpu-9qd4m", "2026-12-01T08:15:42Z", "GPU-new");
        for slices in [
            vec![old.clone(), new.clone()],
            vec![new.clone(), old.clone()],
        ] {
            let idx = DraIndex::from_slices(slices);
            assert_eq!(idx.len(), 1);
            assert_eq!(
                idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-0")
                    .map(|d| d.uuid.as_str()),
                Some("GPU-new")
            );
        }
        // The old slice deleted, the new one alone: the same answer.
        let idx = DraIndex::from_slices([new]);
        assert_eq!(
            idx.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-0")
                .map(|d| d.uuid.as_str()),
            Some("GPU-new")
        );
    }

    #[test]
    fn version_preference() {
        assert_eq!(pick_version(["v1beta1", "v1", "v1beta2"]), Some("v1"));
        assert_eq!(pick_version(["v1beta1", "v1beta2"]), Some("v1beta2"));
        assert_eq!(pick_version(["v1alpha3", "v1beta1"]), Some("v1beta1"));
        assert_eq!(pick_version(["v1alpha3"]), None);
        assert_eq!(pick_version([]), None);
    }

    #[test]
    fn attribute_values_as_text() {
        assert_eq!(
            attribute_text(&json!({"string": "a"})).as_deref(),
            Some("a")
        );
        assert_eq!(
            attribute_text(&json!({"version": "1.2.3"})).as_deref(),
            Some("1.2.3")
        );
        assert_eq!(attribute_text(&json!({"int": 7})).as_deref(), Some("7"));
        assert_eq!(
            attribute_text(&json!({"bool": true})).as_deref(),
            Some("true")
        );
        assert_eq!(attribute_text(&json!({"other": 1})), None);
    }
}
