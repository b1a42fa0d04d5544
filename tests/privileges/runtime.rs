//! The privilege tests: NVML as non-root without capabilities, the kubelet socket refused
//! to non-root and opened by uid 0 without capabilities, processes outside the PID namespace,
//! and the binary's dynamic links.

use super::*;

// ---------------------------------------------------------------------------------------------
// The privilege tests
// ---------------------------------------------------------------------------------------------

/// NVML needs no privilege of its own: the exporter as uid 65532 with no capabilities becomes
/// ready and exports every GPU.
#[test]
pub(crate) fn nvml_works_as_non_root_without_capabilities() {
    if !can_change_user("nvml_works_as_non_root_without_capabilities") {
        return;
    }
    let sb = Sandbox::new();
    let ex = sb.start(Identity::NonRoot, &[]);
    let text = ex.metrics();
    assert_eq!(plain_metric(&text, "gpu_exporter_nvml_up"), Some(1.0));
    let temps = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    let gpus: BTreeSet<_> = temps.iter().filter_map(|l| label_opt(l, "gpu")).collect();
    assert_eq!(
        gpus,
        BTreeSet::from(["0", "1"]),
        "both GPUs of the a100-l4 node:\n{text}"
    );
    assert!(
        temps.iter().all(|l| value(l) > 0.0),
        "temperatures read: {temps:?}"
    );
}

/// A pod-resources server in `dir`, its socket the way the kubelet leaves it: owned by root,
/// mode 0755. A pod holds GPU 0 (`nvidia0`, the device-node form of the ID).
pub(crate) fn kubelet(rt: &tokio::runtime::Runtime, dir: &Path) -> (FakeKubelet, PathBuf) {
    let socket = dir.join("kubelet.sock");
    let view = KubeletView {
        pods: vec![PodDevices {
            namespace: "ml".into(),
            name: "trainer-0".into(),
            containers: vec![ContainerDevices {
                name: "pytorch".into(),
                devices: vec![("nvidia.com/gpu".into(), vec!["nvidia0".into()])],
                claims: Vec::new(),
            }],
        }],
        allocatable: None,
    };
    let k = rt.block_on(FakeKubelet::start(&socket, view)).unwrap();
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o755)).unwrap();
    let meta = fs::metadata(&socket).unwrap();
    assert_eq!(
        (meta.uid(), meta.mode() & 0o777),
        (0, 0o755),
        "socket as the kubelet creates it"
    );
    (k, socket)
}

pub(crate) fn kubelet_args(socket: &Path) -> Vec<String> {
    [
        "-k",
        "--pod-resources-kubelet-socket",
        socket.to_str().unwrap(),
        "--pod-resources-refresh-interval",
        "200",
        "--kubernetes-pod-metadata=false",
        "--kubernetes-process-metrics=false",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A non-root exporter is refused by the kubelet socket: it says so in the log (naming the
/// socket and that uid 0 is needed), shows it in its self-metrics, never reaches the kubelet,
/// and keeps serving GPU metrics without pod labels.
pub(crate) fn assert_refused(ex: &Exporter, socket: &Path, kubelet: &FakeKubelet) {
    let text = ex.metrics_until("the kubelet error counted", |t| {
        source_metric(t, "gpu_exporter_pod_map_errors_total", "kubelet").is_some_and(|n| n >= 1.0)
    });
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "kubelet"),
        Some(0.0)
    );
    let temps = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert_eq!(temps.len(), 2, "GPU metrics still served:\n{text}");
    let holders = series(&text, "gpu_allocation_info");
    assert!(
        holders.iter().all(|l| label_opt(l, "pod").is_none()),
        "no pod holds a GPU without the kubelet: {holders:?}"
    );
    assert_eq!(kubelet.lists(), 0, "no List call got through");
    let sock = socket.display().to_string();
    let warnings = warnings(ex);
    let refused = warnings
        .iter()
        .map(|(m, _)| m)
        .find(|m| m.contains(&sock))
        .unwrap_or_else(|| panic!("no warning names {sock}: {warnings:?}"));
    assert!(
        refused.contains("Permission denied") && refused.contains("permission denied:"),
        "the OS error and the hint: {refused}"
    );
    assert!(
        refused.contains("uid 0") && refused.contains("no capabilities"),
        "the warning says what to change: {refused}"
    );
}

/// Pod mapping needs uid 0 and nothing more. The kubelet's socket is owned by root with mode
/// 0755 (the kubelet does not chmod it; umask 022), and connecting to a unix socket needs
/// write permission on it: uid 65532 is refused, both on the socket (directory 0755) and on
/// the kubelet's own 0750 directory. uid 0 with every capability dropped (no
/// CAP_DAC_OVERRIDE) connects, as the owner.
#[test]
pub(crate) fn kubelet_socket_refuses_non_root_and_accepts_uid_0_without_capabilities() {
    if !can_change_user("kubelet_socket_refuses_non_root_and_accepts_uid_0_without_capabilities") {
        return;
    }
    let sb = Sandbox::new();
    let rt = tokio_runtime();
    let dir = sb.subdir("pod-resources", 0o755);
    let (kubelet, socket) = kubelet(&rt, &dir);
    let args = kubelet_args(&socket);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // Refused by the socket's mode.
    {
        let ex = sb.start(Identity::NonRoot, &args);
        assert_refused(&ex, &socket, &kubelet);
    }

    // Refused by the directory, as the kubelet creates it (os.MkdirAll(dir, 0750)).
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
    {
        let ex = sb.start(Identity::NonRoot, &args);
        assert_refused(&ex, &socket, &kubelet);
    }

    // uid 0 without any capability: connects, and the pod holds GPU 0 on its allocation series.
    let ex = sb.start(Identity::RootWithoutCapabilities, &args);
    let text = ex.metrics_until("the pod on GPU 0", |t| {
        series(t, "gpu_allocation_info")
            .iter()
            .any(|l| label_opt(l, "gpu") == Some("0") && label_opt(l, "pod") == Some("trainer-0"))
    });
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "kubelet"),
        Some(1.0)
    );
    assert!(kubelet.lists() >= 1);
    let sock = socket.display().to_string();
    assert!(
        warnings(&ex).iter().all(|(m, _)| !m.contains(&sock)),
        "no kubelet warning as uid 0: {:?}",
        warnings(&ex)
    );
}

/// Without hostPID the exporter's /proc holds none of the GPU processes' PIDs (NVML reports
/// host PIDs). It then reports their use without a pod, says why in the log (naming hostPID),
/// and marks the `processes` source down. A PID it can see is attributed (the control), and
/// reading `/proc/<pid>/cgroup` needs no privilege: the exporter runs as uid 65532.
#[test]
pub(crate) fn processes_outside_the_pid_namespace_are_reported_without_a_pod() {
    if !can_change_user("processes_outside_the_pid_namespace_are_reported_without_a_pod") {
        return;
    }
    let sb = Sandbox::new();
    // A container's /proc: its own init, plus (the control) one GPU process of GPU 0 in a
    // pod's cgroup. GPU 1's processes (52001, 52002 in scenarios/a100-l4.toml) are absent.
    let proc_root = sb.subdir("proc", 0o755);
    let pod_uid = "8f1c2a3b-4d5e-4f60-9a7b-1c2d3e4f5a6b";
    let cid = "a".repeat(64);
    for (pid, cgroup) in [
        ("1", "0::/\n".to_owned()),
        (
            "51001",
            format!(
                "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{cid}.scope\n",
                pod_uid.replace('-', "_")
            ),
        ),
    ] {
        let d = proc_root.join(pid);
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o555)).unwrap();
        fs::write(d.join("cgroup"), cgroup).unwrap();
        fs::set_permissions(d.join("cgroup"), fs::Permissions::from_mode(0o444)).unwrap();
    }
    let absent = sb.path().join("no-kubelet.sock");
    let ex = sb.start(
        Identity::NonRoot,
        &[
            "-k",
            "--pod-resources-kubelet-socket",
            absent.to_str().unwrap(),
            "--kubernetes-pod-metadata=false",
            "--kubernetes-process-metrics=true",
            "--proc-root",
            proc_root.to_str().unwrap(),
        ],
    );
    let text = ex.metrics_until("process series of both GPUs", |t| {
        let gpus: BTreeSet<_> = series(t, "gpu_container_processes")
            .iter()
            .filter_map(|l| label_opt(l, "gpu"))
            .collect();
        gpus.len() == 2
    });
    let procs = series(&text, "gpu_container_processes");
    let on = |gpu: &str| -> Vec<&str> {
        procs
            .iter()
            .copied()
            .filter(|l| label_opt(l, "gpu") == Some(gpu))
            .collect()
    };
    // GPU 0: its process is visible, so attributed to the pod its cgroup names.
    assert!(
        on("0")
            .iter()
            .any(|l| label_opt(l, "pod_uid") == Some(pod_uid)),
        "the visible PID is attributed: {procs:?}"
    );
    // GPU 1: its processes are not in this /proc, so reported, but without a pod.
    let gpu1 = on("1");
    assert!(!gpu1.is_empty());
    for l in &gpu1 {
        assert!(
            label_opt(l, "pod_uid").is_none() && label_opt(l, "pod").is_none(),
            "no pod for an invisible PID: {l}"
        );
        assert!(value(l) >= 1.0, "its processes are counted: {l}");
    }
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "processes"),
        Some(0.0)
    );
    assert!(
        source_metric(&text, "gpu_exporter_pod_map_errors_total", "processes")
            .is_some_and(|n| n >= 1.0)
    );
    let root = proc_root.display().to_string();
    let warnings = warnings(&ex);
    assert!(
        warnings
            .iter()
            .any(|(m, f)| m.contains("hostPID") && f["root"].as_str() == Some(root.as_str())),
        "a warning names hostPID and the proc root {root}: {warnings:?}"
    );
}

/// Every library the binary loads at start is one that `gcr.io/distroless/cc` ships (glibc and
/// libgcc); NVML is opened with dlopen at run time, so it is not among them.
#[test]
pub(crate) fn binary_links_only_glibc_and_libgcc() {
    let out = Command::new("ldd").arg(BIN).output().unwrap();
    assert!(out.status.success(), "ldd {BIN}: {out:?}");
    let allowed = [
        "linux-vdso.so.1",
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    ];
    let text = String::from_utf8_lossy(&out.stdout);
    let libs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|l| l.rsplit('/').next().unwrap_or(l))
        .collect();
    assert!(libs.contains(&"libc.so.6"), "ldd output:\n{text}");
    let extra: Vec<_> = libs.iter().filter(|l| !allowed.contains(l)).collect();
    assert!(
        extra.is_empty(),
        "libraries distroless/cc does not ship: {extra:?}"
    );
    assert!(!libs.iter().any(|l| l.contains("nvidia-ml")));
}
