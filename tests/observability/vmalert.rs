//! The same rules in vmalert against a single-node VictoriaMetrics (Debian's
//! `victoria-metrics`): starting both (and a notifier for vmalert that takes anything), the
//! `remote_write` block through which Prometheus hands them the raw scraped series, and what
//! vmalert says of its rules and alerts. It must not start Prometheus or the exporters, nor
//! decide what the test expects: the caller does.

use super::*;

// ---------------------------------------------------------------------------------------------
// VictoriaMetrics and vmalert

/// The ports of a running VictoriaMetrics (Prometheus query API, remote-write receiver) and of
/// the vmalert that evaluates the rules against it.
pub(crate) struct Victoria {
    pub(crate) vm: u16,
    pub(crate) vmalert: u16,
}

/// The binaries of Debian's `victoria-metrics` package.
const VICTORIA_TOOLS: [&str; 2] = ["victoria-metrics", "vmalert"];

/// Starts VictoriaMetrics (data in `procs`' directory) and vmalert evaluating `rule_paths`
/// against it every second, writing recorded series and alert state back into it; returns
/// their ports once both answer `/health`. `None` (after a loud line) when the binaries are
/// missing and `GPU_EXPORTER_SKIP_PROMETHEUS=1`; panics when they are missing otherwise.
pub(crate) fn start_victoria(procs: &mut Procs, rule_paths: &[PathBuf]) -> Option<Victoria> {
    let tools = tools_or_skip(&VICTORIA_TOOLS, "the vmalert check")?;
    let (vm_bin, vmalert_bin) = (&tools[0], &tools[1]);

    // Samples queryable as soon as they arrive (the default hides the last 30 s), and no
    // response cache to serve an answer from before they did.
    let vm = common::free_port();
    let idx = procs.spawn(
        "victoria-metrics",
        Command::new(vm_bin)
            .arg(format!(
                "-storageDataPath={}",
                procs.dir.path().join("victoria-metrics").display()
            ))
            .arg(format!("-httpListenAddr=127.0.0.1:{vm}"))
            .arg("-search.latencyOffset=0s")
            .arg("-search.disableCache")
            .arg("-loggerLevel=WARN"),
    );
    procs.wait_http(idx, vm, "/health", Duration::from_secs(60));
    // A series VictoriaMetrics has not seen before becomes searchable only once its index
    // buffers are flushed, up to 10 s later, and each level of recording rules that reads
    // another adds that (70 s, not 15, for the whole file to have data). Its test hook
    // flushes them now: every 250 ms, until it has not answered for 5 s (it is gone).
    std::thread::spawn(move || {
        let mut last_answer = Instant::now();
        while last_answer.elapsed() < Duration::from_secs(5) {
            if matches!(http_get(vm, "/internal/force_flush", &[]), Ok((200, _))) {
                last_answer = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    });

    // vmalert refuses alerting rules without a notifier: a sink that takes anything.
    let notifier = accept_all();
    let vmalert = common::free_port();
    let idx = procs.spawn(
        "vmalert",
        Command::new(vmalert_bin)
            .args(rule_paths.iter().map(|p| format!("-rule={}", p.display())))
            .arg(format!("-datasource.url=http://127.0.0.1:{vm}"))
            .arg(format!("-remoteWrite.url=http://127.0.0.1:{vm}"))
            .arg("-remoteWrite.flushInterval=1s")
            .arg(format!("-notifier.url=http://127.0.0.1:{notifier}"))
            .arg("-evaluationInterval=1s")
            .arg(format!("-httpListenAddr=127.0.0.1:{vmalert}")),
    );
    // It listens only once the rules have parsed (it exits on a rule it cannot load).
    procs.wait_http(idx, vmalert, "/health", Duration::from_secs(60));
    Some(Victoria { vm, vmalert })
}

/// An HTTP server on 127.0.0.1 that reads each request whole and answers 200 with nothing,
/// from threads that live as long as the test process (vmalert's notifier); returns its port.
fn accept_all() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                serve_connection(conn, |_| b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            });
        }
    });
    port
}

/// The `remote_write` block to append to the Prometheus configuration: the raw scraped series
/// into VictoriaMetrics, flushed within a second, without what the rules record or alert
/// (names with `:`, `accelerator_*`, `ALERTS`, `ALERTS_FOR_STATE`), which vmalert writes there.
pub(crate) fn remote_write_config(vm_port: u16) -> String {
    format!(
        "remote_write:\n\
         \x20 - url: \"http://127.0.0.1:{vm_port}/api/v1/write\"\n\
         \x20   remote_timeout: 5s\n\
         \x20   write_relabel_configs:\n\
         \x20     - source_labels: [__name__]\n\
         \x20       regex: \".*:.*|accelerator_.*|ALERTS|ALERTS_FOR_STATE\"\n\
         \x20       action: drop\n\
         \x20   queue_config:\n\
         \x20     batch_send_deadline: 1s\n\
         \x20     min_backoff: 100ms\n\
         \x20     max_backoff: 1s\n\
         \x20   metadata_config:\n\
         \x20     send: false\n"
    )
}

/// The state of vmalert's rule evaluation: `Ok` once every rule of the file is loaded,
/// evaluated and healthy, and every recording rule's name has a series in VictoriaMetrics
/// (written there by vmalert); otherwise the problems.
pub(crate) fn vmalert_state(v: &Victoria, rules: &[Rule]) -> Result<(), Vec<String>> {
    let mut problems = rules_state("vmalert", v.vmalert, rules)
        .err()
        .unwrap_or_default();
    // Several recording rules may record one name: asked once.
    let recorded: BTreeSet<&str> = rules
        .iter()
        .filter(|r| r.kind == Kind::Record)
        .map(|r| r.name.as_str())
        .collect();
    for name in recorded {
        let answer = prom_api(v.vm, "/api/v1/query", &[("query", name)]);
        let why = match answer {
            Ok(d) if !array(&d, "result").is_empty() => continue,
            Ok(_) => "no series".to_owned(),
            Err(ApiError::Fatal(m) | ApiError::Transient(m)) => m,
        };
        problems.push(format!(
            "VictoriaMetrics: recording rule {name} (written by vmalert): {why}"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The alerts vmalert holds active (pending or firing), as (host, alertname): the host is the
/// alert's `Hostname` label, else its `node` label (kube-state-metrics' alerts), else its
/// `instance`.
pub(crate) fn vmalert_alerts(v: &Victoria) -> Result<BTreeSet<(String, String)>, String> {
    let data = prom_api(v.vmalert, "/api/v1/alerts", &[]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => format!("vmalert /api/v1/alerts: {m}"),
    })?;
    let mut out = BTreeSet::new();
    // `"alerts": null` when there are none.
    for a in array(&data, "alerts") {
        if !matches!(str_of(a, "state"), Some("pending" | "firing")) {
            continue;
        }
        let labels = a.get("labels").unwrap_or(&Value::Null);
        let label = |k: &str| str_of(labels, k).filter(|s| !s.is_empty());
        let name = label("alertname")
            .or_else(|| str_of(a, "name"))
            .unwrap_or("?");
        let host = label("Hostname")
            .or_else(|| label("node"))
            .or_else(|| label("instance"))
            .unwrap_or("");
        out.insert((host.to_owned(), name.to_owned()));
    }
    Ok(out)
}
