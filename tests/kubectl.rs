//! A real `kubectl` against the simulated API server (`gpu_exporter::sim::api::FakeApi`): a
//! Node whose conditions a kube client patched (strategic merge, next to the kubelet's
//! `Ready`), and Events that kube's own `Recorder` wrote through `events.k8s.io/v1` (one
//! published twice, so it carries a `series`), read back with `kubectl get events -A`, `get
//! events.v1.events.k8s.io`, `get node -o jsonpath` and `describe node`, as a user of
//! `--simulate -k` would.
//!
//! kubectl comes from `$KUBECTL`, else `kubectl` on PATH (`common::kubectl`).
#![cfg(feature = "sim")]
// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::kubectl::{self, run};
use gpu_exporter::sim::api::FakeApi;
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_shows_the_conditions_and_events_written_through_kube() {
    let Some(bin) = kubectl::find_or_skip() else {
        return;
    };
    let api = FakeApi::start().await.unwrap();
    api.apply_node(
        json!({"metadata": {"name": "gpu-node-1"}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "kubelet is posting ready status"}]}}),
    );
    api.apply_pod(json!({"metadata": {"name": "trainer-0", "namespace": "ml"},
        "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "trainer"}]}}));
    let client = api.client().unwrap();

    let nodes: Api<Node> = Api::all(client.clone());
    let condition = json!({"status": {"conditions": [{
        "type": "GpuXidCritical", "status": "True", "reason": "Xid79",
        "message": "GPU 3 (GPU-0003) fell off the bus (Xid 79); the node needs a reset",
    }]}});
    nodes
        .patch_status(
            "gpu-node-1",
            &PatchParams::default(),
            &Patch::Strategic(condition),
        )
        .await
        .unwrap();

    let node_uid = api.node("gpu-node-1").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let pod_uid = api.pod("ml", "trainer-0").unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let recorder = Recorder::new(
        client,
        Reporter {
            controller: "gpu-exporter".into(),
            instance: Some("gpu-exporter-gpu-node-1".into()),
        },
    );
    let on_node = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some("gpu-node-1".into()),
        uid: Some(node_uid),
        ..Default::default()
    };
    let xid = Event {
        type_: EventType::Warning,
        reason: "GpuXid79".into(),
        note: Some("GPU 3 (GPU-0003) reported Xid 79, fallen off the bus".into()),
        action: "Detected".into(),
        secondary: None,
    };
    recorder.publish(&xid, &on_node).await.unwrap();
    recorder.publish(&xid, &on_node).await.unwrap();
    let on_pod = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some("trainer-0".into()),
        namespace: Some("ml".into()),
        uid: Some(pod_uid),
        field_path: Some("spec.containers{trainer}".into()),
        ..Default::default()
    };
    let hit = Event {
        note: Some("GPU 3 (GPU-0003) reported Xid 79 while held by container trainer".into()),
        ..xid
    };
    recorder.publish(&hit, &on_pod).await.unwrap();

    let events = api.events();
    assert_eq!(events.len(), 2, "{events:#?}");
    assert!(
        events.iter().any(|e| e["series"]["count"] == 2),
        "the repeat was aggregated into a series: {events:#?}"
    );

    let server = api.url();
    let home = tempfile::tempdir().unwrap();
    let bin2 = bin.clone();
    let home_path = home.path().to_owned();
    let kc = move |args: &'static [&'static str]| {
        let (bin, server, home) = (bin2.clone(), server.clone(), home_path.clone());
        tokio::task::spawn_blocking(move || run(&bin, &server, &home, args))
    };

    let all = kc(&["get", "events", "-A"]).await.unwrap();
    assert!(all.contains("LAST SEEN"), "{all}");
    let node_line = all
        .lines()
        .find(|l| l.contains("node/gpu-node-1"))
        .unwrap_or_else(|| panic!("no node event in:\n{all}"));
    assert!(
        node_line.contains("Warning") && node_line.contains("GpuXid79"),
        "{all}"
    );
    assert!(node_line.starts_with("default"), "{all}");
    let pod_line = all
        .lines()
        .find(|l| l.contains("pod/trainer-0"))
        .unwrap_or_else(|| panic!("no pod event in:\n{all}"));
    assert!(
        pod_line.starts_with("ml") && pod_line.contains("held by container trainer"),
        "{all}"
    );

    let wide = kc(&["get", "events", "-n", "default", "-o", "wide"])
        .await
        .unwrap();
    let line = wide.lines().find(|l| l.contains("GpuXid79")).unwrap();
    assert!(
        line.contains("gpu-exporter") && line.split_whitespace().any(|w| w == "2"),
        "source and the series count in the wide columns:\n{wide}"
    );

    let new_api = kc(&["get", "events.v1.events.k8s.io", "-A"]).await.unwrap();
    assert!(new_api.contains("GpuXid79"), "{new_api}");

    let conditions = kc(&[
        "get",
        "node",
        "gpu-node-1",
        "-o",
        "jsonpath={.status.conditions[*].type}",
    ])
    .await
    .unwrap();
    assert_eq!(conditions.trim(), "Ready GpuXidCritical");

    let nodes_table = kc(&["get", "nodes"]).await.unwrap();
    assert!(
        nodes_table.contains("gpu-node-1") && nodes_table.contains("Ready"),
        "{nodes_table}"
    );

    let describe = kc(&["describe", "node", "gpu-node-1"]).await.unwrap();
    assert!(
        describe.contains("GpuXidCritical") && describe.contains("Xid79"),
        "conditions in describe:\n{describe}"
    );
    assert!(
        describe.contains("fallen off the bus") && describe.contains("(x2 over"),
        "the node's Event, aggregated, in describe:\n{describe}"
    );
    assert!(
        describe.contains("trainer-0"),
        "the node's pods:\n{describe}"
    );
}
