//! Runs `gpu-exporter check`: the daemon's own configuration, counters and pipeline, ticked a
//! few times without serving, and each finding added to the report, one function per section
//! ([`files`], [`nvml`], [`ticks`], [`dcgm`], [`gpus`], [`kubernetes`]).
//!
//! It starts what the daemon starts (through `daemon::pipeline`) so that the check sees exactly
//! what the daemon would; how each finding reads is `findings`'. It must not serve HTTP
//! or decide exit codes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;

use super::findings;
use super::report::{Report, Severity};
use crate::base::clock::unix_now;
use crate::catalogue::csv::CounterSet;
use crate::config::{Cli, Config};
use crate::daemon::pipeline::{KubernetesInUse, Pipeline, Simulated};
use crate::gpu;
use crate::serve;
use crate::snapshot::Snapshot;

/// The checks, in the daemon's order: flags and files, then NVML, then a few ticks of the
/// daemon's own sampler and attribution, then the GPUs and Kubernetes.
pub fn run(cli: Cli) -> Report {
    let mut r = Report::default();
    // Logs would interleave with the report: only errors, on stderr.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("off,gpu_exporter=error"))
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    let rt = match crate::daemon::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            let detail = format!("cannot start the async runtime: {e}");
            r.add("files", "runtime", Severity::Fail, detail, None);
            return r;
        }
    };
    let Some((cfg, counters, pod_label_room, simulated)) = files(&mut r, cli, &rt) else {
        return r;
    };
    address(&mut r, &cfg, &rt);
    let mut pipeline = match Pipeline::build(&cfg, &counters, pod_label_room, &rt, simulated) {
        Ok(p) => p,
        Err(e) => {
            pipeline_failed(&mut r, &e);
            return r;
        }
    };
    let nvml_handle = nvml(&mut r, pipeline.lib_path.as_deref());
    let snap = ticks(&mut r, &mut pipeline, &counters, &cfg);
    let nvml_handle = nvml_handle.filter(|_| snap.stats.nvml_up);
    // The time each field's read takes, on a reader of its own (after the ticks, so that the
    // daemon's reader has settled which fields are unsupported).
    let timings = match nvml_handle {
        Some(nvml) => {
            gpu::reader::timing::time_fields(nvml, cfg.reader.clone(), &counters, unix_now())
        }
        None => Vec::new(),
    };
    findings::from_snapshot(&mut r, &snap, &counters, &timings);
    let gpm_hint = dcgm(&mut r, &mut pipeline, &cfg, &snap);
    if let Some(nvml) = nvml_handle {
        gpus(&mut r, nvml, &snap, &gpm_hint);
    }
    if let Some(k) = pipeline.kubernetes.as_ref() {
        kubernetes(&mut r, &cfg, k, &rt);
    }
    r
}

/// A pipeline that cannot start (the simulated node, the DCGM or HPC thread), reported where
/// the daemon's start-up would stop.
fn pipeline_failed(r: &mut Report, e: &crate::daemon::pipeline::PipelineError) {
    r.add(
        "kubernetes",
        "attribution",
        Severity::Fail,
        e.to_string(),
        None,
    );
}

/// What the checks run on: the validated configuration, the counter set, the pod labels' room
/// under the labels-per-series guard, and the simulated node (if any) the configuration was
/// validated for.
type Checked = (Config, Arc<CounterSet>, Option<usize>, Simulated);

/// Flags, the configuration file, `--web-config-file` and the counters file (with `--simulate`,
/// the simulated node is started first, as the daemon does). A broken counters file is
/// reported, and the rest of the node is still checked with the profile's built-in set, so one
/// bad line does not hide what NVML and the cluster say.
fn files(r: &mut Report, cli: Cli, rt: &tokio::runtime::Runtime) -> Option<Checked> {
    let (cfg, simulated) = flags(r, cli, rt)?;
    web_config(r, &cfg);
    let counters = counters_file(r, &cfg)?;
    let pod_label_room = label_room(r, &cfg, &counters);
    Some((cfg, counters, pod_label_room, simulated))
}

/// The configuration file merged into the flags, then validated (for the simulated node
/// `--simulate` asks for, started here), with its warnings.
fn flags(r: &mut Report, cli: Cli, rt: &tokio::runtime::Runtime) -> Option<(Config, Simulated)> {
    let settings = match cli.merge_config_file() {
        Ok(s) => s,
        Err(e) => {
            let fix = Some("fix the file at the place named");
            r.add("files", "--config-file", Severity::Fail, e.to_string(), fix);
            return None;
        }
    };
    let simulation = match settings.simulation() {
        Ok(s) => s,
        Err(e) => {
            let fix = Some("fix the flag or variable named");
            r.add("files", "flags", Severity::Fail, e.to_string(), fix);
            return None;
        }
    };
    let (simulated, site) = match Simulated::start(simulation.as_ref(), rt) {
        Ok(s) => s,
        Err(e) => {
            pipeline_failed(r, &e);
            return None;
        }
    };
    let cfg = match settings.validate(&site) {
        Ok(c) => c,
        Err(e) => {
            let fix = Some("fix the flag or variable named");
            r.add("files", "flags", Severity::Fail, e.to_string(), fix);
            return None;
        }
    };
    if cfg.warnings.is_empty() {
        r.add("files", "flags", Severity::Ok, "valid", None);
    }
    for w in &cfg.warnings {
        r.add("files", "flags", Severity::Warn, w.clone(), None);
    }
    Some((cfg, simulated))
}

/// `--web-config-file`: none (plain HTTP), or whether it loads.
fn web_config(r: &mut Report, cfg: &Config) {
    match &cfg.serving.config_file {
        Some(p) => match serve::web_config::WebConfig::load(p) {
            Ok(_) => {
                let detail = format!("{} loads", p.display());
                r.add("files", "--web-config-file", Severity::Ok, detail, None);
            }
            Err(e) => {
                let fix = Some("fix the file at the place named");
                r.add(
                    "files",
                    "--web-config-file",
                    Severity::Fail,
                    e.to_string(),
                    fix,
                );
            }
        },
        None => {
            let detail = "none: plain HTTP without authentication";
            r.add("files", "--web-config-file", Severity::Info, detail, None);
        }
    }
}

/// The counters file, or where it does not load, the profile's built-in set the checks go on
/// with (`None` where that fails too); its size and warnings.
fn counters_file(r: &mut Report, cfg: &Config) -> Option<Arc<CounterSet>> {
    let loaded = match cfg.load_counters() {
        Ok(l) => l,
        Err(e) => {
            let fix = Some("fix the line named, or point -f at another file");
            r.add("files", "counters file", Severity::Fail, e.to_string(), fix);
            match cfg.builtin_counters() {
                Ok(l) => {
                    let detail = format!("the checks below use {} instead", l.origin);
                    r.add("files", "counters file", Severity::Info, detail, None);
                    l
                }
                Err(e) => {
                    r.add(
                        "files",
                        "counters file",
                        Severity::Fail,
                        e.to_string(),
                        None,
                    );
                    return None;
                }
            }
        }
    };
    let counters = Arc::new(loaded.set);
    let detail = format!(
        "{} ({} metrics, {} labels)",
        loaded.origin,
        counters.metrics().count(),
        counters.labels().count()
    );
    r.add("files", "counters file", Severity::Ok, detail, None);
    for w in &counters.warnings {
        r.add("files", "counters file", Severity::Warn, w.clone(), None);
    }
    Some(counters)
}

/// The pod labels' room under the labels-per-series guard. The daemon refuses to start where
/// the counter set does not fit; check says so (and goes on, for the other checks, with the
/// pod labels unbounded).
fn label_room(r: &mut Report, cfg: &Config, counters: &CounterSet) -> Option<usize> {
    match cfg.fit_labels(counters) {
        Ok(room) => room,
        Err(e) => {
            let fix = Some("drop labels with --drop-labels, or raise --max-labels-per-series");
            r.add(
                "files",
                "labels per series",
                Severity::Fail,
                e.to_string(),
                fix,
            );
            None
        }
    }
}

/// Whether the listen address can be bound.
fn address(r: &mut Report, cfg: &Config, rt: &tokio::runtime::Runtime) {
    match rt.block_on(serve::bind(&cfg.serving.address)) {
        Ok(_) => {
            let detail = format!("{} can be bound", cfg.serving.address);
            r.add("files", "address", Severity::Ok, detail, None);
        }
        Err(e) => r.add(
            "files",
            "address",
            Severity::Warn,
            format!("{}: {e}", cfg.serving.address),
            Some("in use by a running exporter (fine when checking inside its pod), or another exporter holds the port: choose -a"),
        ),
    }
}

/// The NVML library: loaded or not, how fast, which driver and NVML version.
fn nvml(r: &mut Report, lib_path: Option<&std::path::Path>) -> Option<&'static Nvml> {
    let started = Instant::now();
    match gpu::open(lib_path) {
        Ok(nvml) => {
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let place = lib_path
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| format!("{} through the dynamic loader", gpu::DEFAULT_LIB));
            let detail = format!("{place}, initialised in {ms:.1} ms");
            r.add("nvml", "library", Severity::Ok, detail, None);
            let driver = nvml
                .sys_driver_version()
                .unwrap_or_else(|e| format!("unknown ({e})"));
            let version = nvml
                .sys_nvml_version()
                .unwrap_or_else(|e| format!("unknown ({e})"));
            let detail = format!("driver {driver}, NVML {version}");
            r.add("nvml", "versions", Severity::Ok, detail, None);
            Some(nvml)
        }
        Err(e) => {
            r.add(
                "nvml",
                "library",
                Severity::Fail,
                e.to_string(),
                Some("install the NVIDIA driver on the node and run the container with the NVIDIA runtime (NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility), or give --nvml-lib PATH"),
            );
            None
        }
    }
}

/// A few ticks of the daemon's sampler, so that rates have two samples and the attribution
/// sources have answered (or failed) at least once; the last snapshot, and its exposition's
/// excerpt in the report.
fn ticks(
    r: &mut Report,
    pipeline: &mut Pipeline,
    counters: &Arc<CounterSet>,
    cfg: &Config,
) -> Snapshot {
    let sampler = &mut pipeline.sampler;
    let mut snap = sampler.tick(unix_now());
    let first_ms = snap.stats.duration.as_secs_f64() * 1000.0;
    for i in 0..20 {
        let settled = snap
            .attribution
            .sources
            .iter()
            .all(|s| s.up || s.errors > 0);
        if i >= 2 && settled {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
        snap = sampler.tick(unix_now());
    }
    if snap.stats.nvml_up {
        let last_ms = snap.stats.duration.as_secs_f64() * 1000.0;
        let gpus = snap.devices.len().max(1);
        let detail = format!(
            "{} ticks; the first took {first_ms:.1} ms, the last {last_ms:.1} ms ({:.2} ms per GPU)",
            snap.stats.ticks,
            last_ms / gpus as f64
        );
        r.add("nvml", "ticks", Severity::Ok, detail, None);
        let text = crate::exposition::encode(
            &snap,
            &crate::exposition::counted::Counted::default(),
            counters,
            &cfg.encode_options(),
        );
        r.excerpt = findings::excerpt(&String::from_utf8_lossy(&text), 80);
    }
    snap
}

/// What to do for the `DCGM_FI_PROF_*` fields of a GPU without GPM while DCGM is off.
const TURN_DCGM_ON: &str = "give the hostengine's address with -r (the GPU Operator's \
                            nv-hostengine), or --dcgm-mode embedded where DCGM is installed";

/// DCGM: the mode, the library (where, which version), whether the hostengine answers (and
/// how long the ticks saw it down), each GPU's profiling metric groups, and the fields DCGM
/// refused, each problem with its fix. Returns what to do for the profiling fields of GPUs
/// without GPM, after the flags given.
fn dcgm(r: &mut Report, pipeline: &mut Pipeline, cfg: &Config, snap: &Snapshot) -> String {
    let on_simulated = cfg.dcgm.lib.is_some() && cfg.dcgm.lib == pipeline.simulated_dcgm_lib();
    let Some(client) = pipeline.sampler.dcgm() else {
        r.add(
            "dcgm",
            "mode",
            Severity::Info,
            "off: DCGM_FI_PROF_* fields are exported only for GPUs with GPM (Hopper and later)",
            Some(TURN_DCGM_ON),
        );
        return TURN_DCGM_ON.to_owned();
    };
    let address = match client.mode() {
        crate::dcgm::Mode::Remote(a) => Some(a.to_string()),
        _ => None,
    };
    let mode = match client.mode() {
        crate::dcgm::Mode::Remote(a) => format!("remote, hostengine {a}"),
        m if on_simulated => format!("{} (on the simulated libdcgm)", m.name()),
        m => m.name().to_owned(),
    };
    r.add("dcgm", "mode", Severity::Ok, mode, None);
    let support = client.support(Duration::from_secs(5));
    let library_hint = dcgm_library(r, support.library.as_ref());
    let hostengine_hint = hostengine(r, support.connected.as_ref(), address.as_deref(), snap);
    profiling_groups(r, &support.gpus, snap);
    refused_fields(r, client);
    library_hint.or(hostengine_hint).unwrap_or_else(|| {
        "DCGM answers now but did not in the ticks: see the DCGM section".to_owned()
    })
}

/// The DCGM library: where and which version, or why it cannot be used; then what to do for
/// the profiling fields of GPUs without GPM.
fn dcgm_library(
    r: &mut Report,
    library: Option<&Result<(String, String), crate::dcgm::ClientError>>,
) -> Option<String> {
    match library {
        Some(Ok((place, version))) => {
            let detail = format!("{place}, DCGM {version}");
            r.add("dcgm", "library", Severity::Ok, detail, None);
            None
        }
        Some(Err(why)) => {
            let fix = "install DCGM 4 (datacenter-gpu-manager-4-core) or use the image with \
                       libdcgm; or --dcgm-lib PATH; or --dcgm-mode off";
            r.add(
                "dcgm",
                "library",
                Severity::Warn,
                why.to_string(),
                Some(fix),
            );
            Some(format!(
                "the DCGM library cannot be used (see the DCGM section): {fix}"
            ))
        }
        None => None,
    }
}

/// Whether the hostengine (at `address` in remote mode, else the embedded one) answers, and
/// how long the ticks saw it down; where it does not, what to do for the profiling fields of
/// GPUs without GPM.
fn hostengine(
    r: &mut Report,
    connected: Option<&Result<(), crate::dcgm::ClientError>>,
    address: Option<&str>,
    snap: &Snapshot,
) -> Option<String> {
    let fix = match address {
        Some(a) => format!(
            "start nv-hostengine at {a} (the GPU Operator's dcgm.enabled=true), or check the \
             address it listens on (nv-hostengine --port, --domain-socket) against -r \
             (DCGM_REMOTE_HOSTENGINE_INFO), and that it is reachable from this pod"
        ),
        None => "embedded mode loads DCGM's modules in this process: it needs DCGM 4 \
                 installed, the profiling module, and the privileges profiling needs (or use \
                 -r with a hostengine)"
            .to_owned(),
    };
    // How the ticks saw it: since when it has not answered.
    let st = &snap.stats.dcgm;
    let seen = match st.state {
        crate::snapshot::DcgmState::Down => format!(
            "; down for {:.1} s in the ticks ({} tick(s) without an answer)",
            (snap.taken_at_unix - st.since_unix).max(0.0),
            st.failed_ticks
        ),
        _ => String::new(),
    };
    match connected {
        Some(Ok(())) => {
            r.add("dcgm", "hostengine", Severity::Ok, "answers", None);
            None
        }
        Some(Err(why)) => {
            r.add(
                "dcgm",
                "hostengine",
                Severity::Fail,
                format!("{why}{seen}"),
                Some(&fix),
            );
            Some(match address {
                Some(a) => format!(
                    "DCGM serves them once the hostengine at {a} answers: start it, or \
                     point -r at the address it listens on (the DCGM section has more)"
                ),
                None => "DCGM serves them once the embedded hostengine starts (the DCGM \
                         section says why it did not)"
                    .to_owned(),
            })
        }
        None => None,
    }
}

/// Each GPU's profiling metric groups, as DCGM lists them, in NVML's order (DCGM lists them by
/// UUID); a GPU NVML does not show, last.
fn profiling_groups(r: &mut Report, gpus: &[crate::dcgm::GpuGroups], snap: &Snapshot) {
    let index = |uuid: &str| snap.devices.iter().find(|d| d.uuid == uuid).map(|d| d.gpu);
    let mut listed: Vec<_> = gpus.iter().collect();
    listed.sort_by_key(|g| index(&g.uuid).unwrap_or(u32::MAX));
    for g in listed {
        let gpu = index(&g.uuid).map_or_else(|| g.uuid.clone(), |i| format!("GPU {i}"));
        let subject = format!("{gpu} profiling groups");
        match &g.groups {
            Ok(groups) if groups.is_empty() => {
                let detail = "none: DCGM profiles Volta and later";
                r.add("dcgm", subject, Severity::Info, detail, None);
            }
            Ok(groups) => {
                let list: Vec<String> = groups
                    .iter()
                    .map(|m| {
                        let ids: Vec<String> = m.fields.iter().map(u16::to_string).collect();
                        format!("{}.{} ({})", m.major, m.minor, ids.join(","))
                    })
                    .collect();
                let detail = format!("{} (major.minor (field ids))", list.join(", "));
                r.add("dcgm", subject, Severity::Ok, detail, None);
            }
            Err(why) => r.add("dcgm", subject, Severity::Info, why.clone(), None),
        }
    }
}

/// The fields DCGM refused to watch, on which GPU or GPU instance, and why.
fn refused_fields(r: &mut Report, client: &crate::dcgm::Client) {
    for ((t, f), why) in client.refused() {
        let name = crate::catalogue::by_id(u32::from(*f)).map_or("a field", |d| d.name);
        let at = match t.gi {
            Some(gi) => format!("{} instance {gi}", t.uuid),
            None => t.uuid.clone(),
        };
        r.add(
            "dcgm",
            format!("{name} on {at}"),
            Severity::Warn,
            why.clone(),
            Some("DCGM watches one metric group per major id: keep one of the conflicting fields in the counters file"),
        );
    }
}

/// MIG mode and GPM (the source of `DCGM_FI_PROF_*` here), per GPU; `gpm_hint` is what to do
/// for a GPU without GPM while DCGM does not serve it (from [`dcgm`], after the flags given).
fn gpus(r: &mut Report, nvml: &'static Nvml, snap: &Snapshot, gpm_hint: &str) {
    for d in snap.devices.iter().filter(|d| d.up) {
        let subject = format!("GPU {} MIG mode", d.gpu);
        let word = |on: u32| if on == 1 { "enabled" } else { "disabled" };
        // By UUID: the GPU the snapshot names, even if an index shifted since it was taken.
        let dev = || nvml.device_by_uuid(d.uuid.as_str());
        match dev().and_then(|dev| dev.mig_mode()) {
            Ok(m) if m.current != m.pending => r.add(
                "gpus",
                subject,
                Severity::Warn,
                format!(
                    "{} now, {} after the next GPU reset",
                    word(m.current),
                    word(m.pending)
                ),
                Some("a MIG mode change is pending: reset the GPU (nvidia-smi -r) or reboot the node"),
            ),
            Ok(m) => r.add("gpus", subject, Severity::Ok, word(m.current), None),
            Err(nvml_wrapper::error::NvmlError::NotSupported) => {
                r.add("gpus", subject, Severity::Ok, "not supported by this GPU", None)
            }
            Err(e) => {
                let detail = format!("NVML could not say: {e}");
                r.add("gpus", subject, Severity::Info, detail, None)
            }
        }
        let subject = format!("GPU {} GPM", d.gpu);
        match dev().and_then(|dev| dev.gpm_support()) {
            Ok(true) => r.add(
                "gpus",
                subject,
                Severity::Ok,
                "supported: the DCGM_FI_PROF_* fields come from it",
                None,
            ),
            Ok(false) if snap.stats.dcgm.up() == Some(true) => r.add(
                "gpus",
                subject,
                Severity::Ok,
                "not supported (GPM needs Hopper or later): DCGM serves the DCGM_FI_PROF_* fields \
                 of this GPU (see the DCGM section)",
                None,
            ),
            Ok(false) if snap.stats.dcgm.up().is_none() => r.add(
                "gpus",
                subject,
                Severity::Info,
                "not supported (GPM needs Hopper or later): DCGM_FI_PROF_* fields are not exported for this GPU",
                Some(gpm_hint),
            ),
            Ok(false) => r.add(
                "gpus",
                subject,
                Severity::Warn,
                format!(
                    "not supported (GPM needs Hopper or later), and DCGM, which would serve the \
                     DCGM_FI_PROF_* fields of this GPU, is {}: they are not exported for it",
                    snap.stats.dcgm.state.as_str()
                ),
                Some(gpm_hint),
            ),
            Err(e) => {
                let detail = format!("NVML could not say: {e}");
                r.add("gpus", subject, Severity::Info, detail, None)
            }
        }
    }
}

/// The kubelet socket, the proc tree, and the Kubernetes API client with its permissions.
fn kubernetes(r: &mut Report, cfg: &Config, k: &KubernetesInUse, rt: &tokio::runtime::Runtime) {
    let Some(kcfg) = cfg.kubernetes.as_ref() else {
        return;
    };
    findings::socket(r, &k.socket);
    if let Some(root) = &k.proc_root {
        findings::proc_root(r, root, std::process::id());
    }
    let writes = &cfg.health;
    if !(kcfg.pod_metadata || kcfg.dra || writes.writes()) {
        return;
    }
    match &k.client {
        Some(client) => {
            use crate::sources::kube::access;
            let detail = format!("from {}", k.api_config);
            r.add("kubernetes", "API client", Severity::Ok, detail, None);
            let needs = access::needed(
                kcfg.pod_metadata,
                kcfg.dra,
                writes.node_conditions,
                writes.events,
            );
            let reviews = rt.block_on(access::review(client, &needs));
            let node = k.node_name.as_deref();
            // The pods on this node are listed only where the exporter watches them: without
            // the pod watch it never lists pods, and a role without that verb is right.
            let pods = if kcfg.pod_metadata {
                Some(rt.block_on(access::pods_on_node(client, node)))
            } else {
                None
            };
            findings::api(r, &reviews, pods, node);
        }
        None => r.add(
            "kubernetes",
            "API client",
            Severity::Fail,
            "no Kubernetes API client: neither an in-cluster service account nor KUBECONFIG",
            Some("run in a pod with a service account token (automountServiceAccountToken), or turn --kubernetes-pod-metadata off"),
        ),
    }
}
