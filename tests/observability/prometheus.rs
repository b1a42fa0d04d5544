//! A real Prometheus scraping exporters that run `--simulate`: its HTTP API, the processes
//! (cleaned up on drop), and the evaluation of every rule, panel query and variable.

use super::*;

// ---------------------------------------------------------------------------------------------
// HTTP

/// HTTP GET on 127.0.0.1 through ureq (query parameters percent-encoded by it, chunked bodies
/// decoded by it); returns (status code, body) for any status.
pub(crate) fn http_get(
    port: u16,
    path: &str,
    params: &[(&str, &str)],
) -> Result<(u16, Vec<u8>), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut req = agent.get(&url).header("Accept", "application/json");
    for (k, v) in params {
        req = req.query(*k, *v);
    }
    let mut resp = req.call().map_err(|e| format!("{url}: {e}"))?;
    let code = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_vec()
        .map_err(|e| format!("{url}: reading the body: {e}"))?;
    Ok((code, body))
}

/// One HTTP/1.1 request a stand-in server read: method, path, Content-Type, and the body
/// (`None` when the request had no Content-Length: it is not read, and the connection closes
/// after the answer).
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) content_type: String,
    pub(crate) body: Option<Vec<u8>>,
}

/// Serves the requests of one keep-alive connection, one after the other, until it closes or
/// idles for 5 s: each request read whole is given to `answer`, whose bytes go back.
pub(crate) fn serve_connection(
    conn: std::net::TcpStream,
    mut answer: impl FnMut(Request) -> &'static [u8],
) {
    use std::io::{BufRead, BufReader, Read, Write};
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if !matches!(reader.read_line(&mut request_line), Ok(n) if n > 0) {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_owned(),
            parts.next().unwrap_or("").to_owned(),
        );
        let (mut length, mut content_type) = (None::<u64>, String::new());
        let mut line = String::new();
        loop {
            line.clear();
            if !matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().ok();
                } else if k.eq_ignore_ascii_case("content-type") {
                    content_type = v.trim().to_owned();
                }
            }
        }
        let body = match length {
            Some(length) => {
                let mut body = Vec::new();
                if !matches!((&mut reader).take(length).read_to_end(&mut body), Ok(n) if n as u64 == length)
                {
                    return;
                }
                Some(body)
            }
            None => None,
        };
        let close = body.is_none();
        let reply = answer(Request {
            method,
            path,
            content_type,
            body,
        });
        if reader.get_mut().write_all(reply).is_err() || close {
            return;
        }
    }
}

/// What a Prometheus API call said: its `data`, or why not.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// The expression itself is wrong (`bad_data`): retrying cannot help.
    Fatal(String),
    /// Anything else (no connection, an execution error that depends on the data).
    Transient(String),
}

pub(crate) fn prom_api(port: u16, path: &str, params: &[(&str, &str)]) -> Result<Value, ApiError> {
    let (code, body) = http_get(port, path, params).map_err(ApiError::Transient)?;
    let json: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::Transient(format!(
            "HTTP {code}, not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        ))
    })?;
    if str_of(&json, "status") == Some("success") {
        return Ok(json.get("data").cloned().unwrap_or(Value::Null));
    }
    let msg = format!(
        "{}: {}",
        str_of(&json, "errorType").unwrap_or("error"),
        str_of(&json, "error").unwrap_or("(no message)")
    );
    if str_of(&json, "errorType") == Some("bad_data") {
        Err(ApiError::Fatal(msg))
    } else {
        Err(ApiError::Transient(msg))
    }
}

/// One sample of an instant query: its labels and value (a scalar is one sample without
/// labels).
pub(crate) type Sample = (BTreeMap<String, String>, f64);

/// Now, in Unix seconds (for instant queries at one moment).
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An instant query at `time` (Unix seconds): its samples.
pub(crate) fn query_at(port: u16, query: &str, time: f64) -> Result<Vec<Sample>, String> {
    let time = format!("{time:.3}");
    let data = prom_api(port, "/api/v1/query", &[("query", query), ("time", &time)]).map_err(
        |e| match e {
            ApiError::Fatal(m) | ApiError::Transient(m) => format!("{query}: {m}"),
        },
    )?;
    let value = |v: &Value| {
        v.get(1)
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<f64>().ok())
            .ok_or_else(|| format!("no value in {v}"))
    };
    match str_of(&data, "resultType") {
        Some("vector") => array(&data, "result")
            .iter()
            .map(|s| {
                let labels = s
                    .get("metric")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                Ok((labels, value(s.get("value").unwrap_or(&Value::Null))?))
            })
            .collect(),
        Some("scalar") => Ok(vec![(
            BTreeMap::new(),
            value(data.get("result").unwrap_or(&Value::Null))?,
        )]),
        other => Err(format!("{query}: result type {other:?}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// Child processes, killed when this is dropped (also when a test panics), with their logs
/// in a temporary directory that outlives them.
pub(crate) struct Procs {
    pub(crate) children: Vec<(String, Child)>,
    pub(crate) dir: tempfile::TempDir,
}

impl Drop for Procs {
    /// SIGTERM first (the exporter then removes its simulated cluster's temporary directory),
    /// SIGKILL for whatever is still running 5 s later.
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = Command::new("kill")
                    .args(["-TERM", &c.id().to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, c) in &mut self.children {
            while Instant::now() < deadline && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Procs {
    pub(crate) fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    pub(crate) fn spawn(&mut self, name: &str, cmd: &mut Command) -> usize {
        let log = std::fs::File::create(self.log_path(name)).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"));
        self.children.push((name.to_owned(), child));
        self.children.len() - 1
    }

    /// The last lines of a child's log.
    pub(crate) fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.log_path(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Starts the `prometheus` binary at `tool` with `config` (YAML) on a free port, with its
    /// data in this run's directory; returns the port once it is ready.
    pub(crate) fn start_prometheus(&mut self, tool: &Path, config: &str) -> u16 {
        let config_path = self.dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = common::free_port();
        let idx = self.spawn(
            "prometheus",
            Command::new(tool)
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    self.dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn"),
        );
        self.wait_http(idx, port, "/-/ready", Duration::from_secs(60));
        port
    }

    /// Waits until child `idx` answers `path` on `port` with 200.
    pub(crate) fn wait_http(&mut self, idx: usize, port: u16, path: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if matches!(http_get(port, path, &[]), Ok((200, _))) {
                return;
            }
            let (name, child) = &mut self.children[idx];
            let name = name.clone();
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "{name} exited ({status}) before {path} answered 200; its log:\n{}",
                    self.log_tail(&name)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{name}: {path} on port {port} did not answer 200 within {within:?}; its log:\n{}",
                    self.log_tail(&name)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// An exporter command on a free port with the recommended counters.
pub(crate) fn exporter(root: &Path, port: u16) -> Command {
    exporter_with(root, port, "counters/recommended.csv")
}

/// An exporter command on a free port with the counters file `counters` (relative to `root`).
pub(crate) fn exporter_with(root: &Path, port: u16, counters: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(root)
        .args(["-f", counters, "-c", "1000", "-a"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .env_remove("NODE_NAME")
        .env_remove("RUST_LOG")
        .env_remove("GPU_EXPORTER_SIMULATE")
        .env_remove("DCGM_EXPORTER_COLLECTORS");
    cmd
}

// ---------------------------------------------------------------------------------------------
// The real server

/// One thing to ask Prometheus until it answers with data.
pub(crate) struct Check {
    pub(crate) what: String,
    pub(crate) ask: Ask,
    /// The last answer: `None` once satisfied.
    pub(crate) last: Option<String>,
    pub(crate) fatal: bool,
}

pub(crate) enum Ask {
    /// An instant query that must return a non-empty result.
    Query(String),
    /// A label's values among the series matching a selector; empty is allowed for `cluster`.
    LabelValues {
        label: String,
        selector: Option<String>,
        allow_empty: bool,
    },
}

impl Check {
    pub(crate) fn new(what: String, ask: Ask) -> Self {
        Self {
            what,
            ask,
            last: Some("not asked yet".into()),
            fatal: false,
        }
    }

    pub(crate) fn shown(&self) -> String {
        match &self.ask {
            Ask::Query(q) => q.clone(),
            Ask::LabelValues {
                label, selector, ..
            } => format!(
                "/api/v1/label/{label}/values?match[]={}",
                selector.as_deref().unwrap_or("")
            ),
        }
    }

    /// Asks once; records the outcome.
    pub(crate) fn ask(&mut self, port: u16) {
        let answer = match &self.ask {
            Ask::Query(q) => prom_api(port, "/api/v1/query", &[("query", q)]).map(|d| {
                let r = d.get("result");
                match r {
                    Some(Value::Array(a)) if str_of(&d, "resultType") != Some("scalar") => {
                        !a.is_empty()
                    }
                    Some(Value::Array(_)) | Some(Value::String(_)) => true,
                    _ => false,
                }
            }),
            Ask::LabelValues {
                label,
                selector,
                allow_empty,
            } => {
                let path = format!("/api/v1/label/{label}/values");
                let params: Vec<(&str, &str)> = selector
                    .as_deref()
                    .map(|s| vec![("match[]", s)])
                    .unwrap_or_default();
                prom_api(port, &path, &params)
                    .map(|d| *allow_empty || d.as_array().is_some_and(|a| !a.is_empty()))
            }
        };
        self.last = match answer {
            Ok(true) => None,
            Ok(false) => Some("empty result".into()),
            Err(ApiError::Transient(e)) => Some(e),
            Err(ApiError::Fatal(e)) => {
                self.fatal = true;
                Some(e)
            }
        };
    }

    pub(crate) fn done(&self) -> bool {
        self.last.is_none() || self.fatal
    }
}

/// `label_values(<selector>, <label>)` or `label_values(<label>)` → (selector, label).
pub(crate) fn parse_label_values(q: &str) -> Option<(Option<String>, String)> {
    let inner = q
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?
        .trim();
    // The last comma outside quotes, braces and parentheses separates the label.
    let (mut depth, mut quote, mut split) = (0i32, None::<char>, None);
    let mut prev = ' ';
    for (i, c) in inner.char_indices() {
        match quote {
            Some(qc) => {
                if c == qc && prev != '\\' {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' | '`' => quote = Some(c),
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => split = Some(i),
                _ => {}
            },
        }
        prev = c;
    }
    match split {
        Some(i) => Some((
            Some(inner[..i].trim().to_owned()),
            inner[i + 1..].trim().to_owned(),
        )),
        None => Some((None, inner.to_owned())),
    }
}

/// The state of the rule evaluation of `engine` (Prometheus, or vmalert: the same
/// `/api/v1/rules` answer) at `port`: `Ok` once every rule of the file is loaded, evaluated and
/// healthy; otherwise the problems.
pub(crate) fn rules_state(engine: &str, port: u16, want: &[Rule]) -> Result<(), Vec<String>> {
    let data = prom_api(port, "/api/v1/rules", &[]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => {
            vec![format!("{engine} /api/v1/rules: {m}")]
        }
    })?;
    let mut problems = Vec::new();
    let mut loaded = 0;
    for g in array(&data, "groups") {
        let group = str_of(g, "name").unwrap_or("?");
        for r in array(g, "rules") {
            loaded += 1;
            let name = str_of(r, "name").unwrap_or("?");
            let kind = str_of(r, "type").unwrap_or("?");
            let what = format!("{engine}: group «{group}» {kind} rule {name}");
            let last = str_of(r, "lastEvaluation").unwrap_or("");
            if last.is_empty() || last.starts_with("0001-01-01") {
                problems.push(format!("{what}: not evaluated yet"));
                continue;
            }
            if str_of(r, "health") != Some("ok") {
                problems.push(format!(
                    "{what}: health {:?}, lastError {:?}; query: {}",
                    str_of(r, "health").unwrap_or("?"),
                    str_of(r, "lastError").unwrap_or(""),
                    str_of(r, "query").unwrap_or("")
                ));
            }
        }
    }
    if loaded != want.len() {
        problems.push(format!(
            "{engine} loaded {loaded} rules, {RULES_FILE} has {}",
            want.len()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

pub(crate) fn check_prometheus(dashboards_dir: &Path, alerts: &Path) {
    let test = "prometheus_evaluates_every_panel_and_rule";
    let Some(tools) = tools_or_skip(&["prometheus", "promtool"], test) else {
        return;
    };
    let started = Instant::now();
    let mut f = Failures::default();

    // What to ask: every rule expression, panel query and label_values variable.
    let mut rules = load_rules(alerts, &mut f)
        .map(|(_, r)| r)
        .unwrap_or_default();
    rules.extend(
        load_rules_file(alerts, PRICES_FILE, &mut f)
            .map(|(_, r)| r)
            .unwrap_or_default(),
    );
    let dashboards = load_dashboards(dashboards_dir, &mut f);
    let mut checks: Vec<Check> = rules
        .iter()
        .map(|r| Check::new(r.what(), Ask::Query(r.expr.clone())))
        .collect();
    let mut panels = 0;
    let mut variable_checks = 0;
    let mut a100_checks = 0;
    for d in &dashboards {
        panels += d.panels().iter().filter(|p| is_query_panel(p)).count();
        let subst = d.substitutions();
        for (what, expr) in d.targets() {
            checks.push(Check::new(what, Ask::Query(substitute(&expr, &subst))));
        }
        match a100_profiling_targets(d) {
            Ok(t) => {
                a100_checks += t.len();
                checks.extend(t.into_iter().map(|(w, q)| Check::new(w, Ask::Query(q))));
            }
            Err(e) => f.add(e),
        }
        for v in d.variables() {
            if str_of(v, "type") != Some("query") {
                continue;
            }
            let name = str_of(v, "name").unwrap_or("?");
            let what = format!("{} variable ${name}", d.what());
            let Some(q) = variable_query(v) else {
                f.add(format!("{what}: query variable without a query"));
                continue;
            };
            let q = substitute(&q, &subst);
            let ask = if let Some(inner) = q
                .trim()
                .strip_prefix("query_result(")
                .and_then(|s| s.strip_suffix(')'))
            {
                Ask::Query(inner.to_owned())
            } else if let Some((selector, label)) = parse_label_values(&q) {
                Ask::LabelValues {
                    allow_empty: label == "cluster",
                    label,
                    selector,
                }
            } else {
                f.add(format!(
                    "{what}: {q:?}: expected label_values(<selector>, <label>) or query_result(<expr>)"
                ));
                continue;
            };
            variable_checks += 1;
            checks.push(Check::new(what, ask));
        }
    }

    if a100_checks == 0 {
        f.add(format!(
            "no dashboard panel charts a profiling field: nothing was checked on {A100_MIG_NODE}"
        ));
    }

    // The exporters: the simulated nodes, one without a driver, and a target that is down.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut procs = Procs {
        children: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
    };
    let mut targets = Vec::new();
    let mut waits = Vec::new();
    for scenario in SIMULATED {
        let port = common::free_port();
        let name = format!("exporter-{}", scenario.replace('/', "_"));
        let mut cmd = exporter(root, port);
        cmd.args(["--simulate", scenario]);
        if scenario == A100_MIG_SCENARIO {
            // The full label shape, which OpenCost's usage query needs (cost::check_opencost).
            cmd.args(OPENCOST_SHAPE);
        }
        let idx = procs.spawn(&name, &mut cmd);
        waits.push((idx, port, "/ready"));
        targets.push(port);
    }
    {
        // No driver: /ready never answers 200, /health does.
        let port = common::free_port();
        let idx = procs.spawn(
            "exporter-no-driver",
            exporter(root, port).args(["--simulate", NO_DRIVER_SCENARIO]),
        );
        waits.push((idx, port, "/health"));
        targets.push(port);
    }
    targets.push(common::free_port());
    // The mixed fleet (mixed::MIXED): the incidents node under each dcgm-* profile and in the
    // native profile's full label shape.
    for m in &MIXED {
        let port = common::free_port();
        let idx = procs.spawn(
            &format!("exporter-{}", m.node),
            exporter_with(root, port, m.counters)
                .args(["--simulate", INCIDENTS_SCENARIO])
                .args(m.args)
                .env("NODE_NAME", m.node),
        );
        waits.push((idx, port, "/ready"));
        targets.push(port);
    }
    // The node to price (cost::check_cost), with its pods' `team` labels, and a node whose
    // GPUs are all idle (GpuNodeIdle's expression): started once Prometheus runs, below, as
    // nothing in them depends on scenario time, while the incidents' faults (10 s to 60 s of
    // scenario time) must be seen while they last.
    let late = [
        (
            "exporter-cost",
            common::free_port(),
            vec![
                "--simulate",
                COST_SCENARIO,
                "--kubernetes-enable-pod-labels",
            ],
        ),
        (
            "exporter-idle",
            common::free_port(),
            vec!["--simulate", IDLE_SCENARIO],
        ),
    ];
    targets.extend(late.iter().map(|(_, port, _)| *port));
    for (idx, port, path) in waits {
        procs.wait_http(idx, port, path, Duration::from_secs(60));
    }

    // A stand-in kube-state-metrics with the Node conditions (placement::kube_state_metrics_text).
    let ksm = serve_text(kube_state_metrics_text());

    // Prometheus scraping them every second, with the rules.
    let rule_paths = match evaluated_copies(alerts, procs.dir.path()) {
        Ok(p) => p,
        Err(e) => {
            f.add(e);
            Vec::new()
        }
    };
    // VictoriaMetrics and vmalert with the same rules, fed by Prometheus' remote_write.
    let victoria = start_victoria(&mut procs, &rule_paths);
    let mut config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n{}\
         scrape_configs:\n  - job_name: gpu-exporter\n    static_configs:\n      - targets: [{}]\n\
         \x20 - job_name: kube-state-metrics\n    static_configs:\n      - targets: [\"127.0.0.1:{ksm}\"]\n",
        rule_paths
            .iter()
            .map(|p| format!(
                "  - {}\n",
                serde_json::to_string(&p.to_string_lossy()).unwrap()
            ))
            .collect::<String>(),
        targets
            .iter()
            .map(|p| format!("\"127.0.0.1:{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Who was hit (alerts/README.md#gpuhealthcritical): the pods that held a GPU when it
    // reported an Xid, here Xid 79 of the incidents node's GPU 4, whose series end when it is
    // lost: the pod that held it must come back.
    checks.push(Check::new(
        "the pod that held the GPU that reported Xid 79".into(),
        Ask::Query(
            "max_over_time(gpu_allocation_info{pod=\"batch-embed-28811600-4kx7w\"}[1h]) \
             * on (instance, UUID) group_left (xid) \
             (max by (instance, UUID, xid) (max_over_time(gpu_xid_errors_total{xid=\"79\"}[1h])) > 0)"
                .into(),
        ),
    ));
    if let Some(v) = &victoria {
        config.push_str(&remote_write_config(v.vm));
    }
    let prom_port = procs.start_prometheus(&tools[0], &config);
    for (name, port, args) in late {
        procs.spawn(name, exporter(root, port).args(args));
    }
    let deadline = Instant::now() + EVAL_DEADLINE;

    // Ask until everything has data and the alerts sit where the scenarios put their
    // causes, or the deadline.
    let (no_driver, down) = (targets[SIMULATED.len()], targets[SIMULATED.len() + 1]);
    let mut expected_alerts = expected_alerts(no_driver, down);
    let readme = std::fs::read_to_string(alerts.join(RUNBOOK_FILE)).unwrap_or_default();
    let mixed = mixed_expected_alerts(&expected_alerts, &readme, &mut f);
    expected_alerts.extend(mixed);
    let mut rule_problems;
    let mut placement;
    let mut vm_problems = Vec::new();
    loop {
        // Asked every time: a rule's health is that of its last evaluation.
        rule_problems = rules_state("Prometheus", prom_port, &rules)
            .err()
            .unwrap_or_default();
        for c in checks.iter_mut().filter(|c| !c.done()) {
            c.ask(prom_port);
        }
        placement = alert_placement(prom_port, &expected_alerts);
        if let Some(v) = &victoria {
            vm_problems = vmalert_problems(v, &rules, &expected_alerts);
        }
        if (rule_problems.is_empty()
            && checks.iter().all(Check::done)
            && placement.is_ok()
            && vm_problems.is_empty())
            || Instant::now() > deadline
        {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    for p in rule_problems {
        f.add(p);
    }
    // The same panels have data on every shape of the incidents node (mixed::check_mixed_panels).
    let doc_path = root.join("docs/dashboards.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_default();
    check_mixed_panels(
        prom_port,
        &dashboards,
        &doc,
        Duration::from_secs(30),
        &mut f,
    );
    check_mixed_node_variable(prom_port, &dashboards, &mut f);
    // What the cost rules say of the priced node, against the test's own arithmetic, and
    // OpenCost's usage query (cost::check_cost, cost::check_opencost).
    check_cost(prom_port, &mut f);
    check_opencost(prom_port, &mut f);
    for p in vm_problems {
        f.add(format!("vmalert: {p}"));
    }
    if let Err(p) = placement {
        f.add(p);
    }
    for c in &checks {
        if let Some(why) = &c.last {
            f.add(format!("{}: {why}: {}", c.what, c.shown()));
        }
    }
    if let Some((_, c)) = procs.children.iter_mut().find(|(n, _)| n == "prometheus")
        && let Ok(Some(status)) = c.try_wait()
    {
        f.add(format!(
            "prometheus exited ({status}); its log:\n{}",
            procs.log_tail("prometheus")
        ));
    }
    say(&format!(
        "observability: {} rules, {} dashboards, {panels} panels, {} queries ({variable_checks} variables, {a100_checks} on {A100_MIG_NODE}) checked against Prometheus in {:.1} s",
        rules.len(),
        dashboards.len(),
        checks.len(),
        started.elapsed().as_secs_f64()
    ));
    drop(procs);
    f.finish(&format!(
        "Prometheus evaluating {} and {}",
        dashboards_dir.display(),
        alerts.join(RULES_FILE).display()
    ));
}

/// The rules and example prices as Prometheus and vmalert evaluate them here: copies in `dir`
/// in which every group that sets its own `interval:` (right-sizing every 5 minutes; the
/// inventory, node, namespace, fleet, cost, sustained, kubernetes and exporter groups every
/// minute) runs every second instead
/// ([`with_test_intervals`]). That is the one change; the expressions are the files'.
pub(crate) fn evaluated_copies(alerts: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for file in [RULES_FILE, PRICES_FILE] {
        let mut text = std::fs::read_to_string(alerts.join(file))
            .map_err(|e| format!("{file}: cannot read: {e}"))?;
        if file == RULES_FILE {
            text = with_test_intervals(&text)?;
        }
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(path);
    }
    Ok(out)
}

/// The rules file with each group's own `interval:` (the line after its `- name:`) set to 1s:
/// a server staggers a group's first evaluation by up to its interval, so a group evaluated
/// every minute or every 5 minutes would have no data within a test's deadline. The
/// right-sizing group must be among them (it reads a day of samples and says so).
pub(crate) fn with_test_intervals(rules: &str) -> Result<String, String> {
    let lines: Vec<&str> = rules.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut changed = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let after_name = i > 0
            && lines[i - 1]
                .trim_start()
                .starts_with("- name: gpu-exporter.");
        if after_name && t.starts_with("interval:") {
            let indent = &line[..line.len() - t.len()];
            out.push(format!("{indent}interval: 1s"));
            changed.push(
                lines[i - 1]
                    .trim_start()
                    .trim_start_matches("- name: ")
                    .to_owned(),
            );
        } else {
            out.push((*line).to_owned());
        }
    }
    if !changed.iter().any(|g| g == "gpu-exporter.rightsizing") {
        return Err(format!(
            "{RULES_FILE}: the group gpu-exporter.rightsizing no longer sets its own `interval:` \
             on the line after its name (groups with one: {changed:?}); update with_test_intervals"
        ));
    }
    Ok(out.join("\n") + "\n")
}

/// What vmalert (against VictoriaMetrics) says wrong: a rule not loaded, not evaluated,
/// unhealthy or without recorded data (`vmalert_state`), or alerts on the compared nodes and
/// exporters other than those expected (`expected`, as `host alertname …` keys).
fn vmalert_problems(v: &Victoria, rules: &[Rule], expected: &BTreeSet<String>) -> Vec<String> {
    let mut problems = vmalert_state(v, rules).err().unwrap_or_default();
    let want: BTreeSet<(String, String)> = expected
        .iter()
        .filter_map(|k| {
            let mut w = k.split(' ');
            Some((w.next()?.to_owned(), w.next()?.to_owned()))
        })
        .collect();
    let hosts: BTreeSet<&String> = want.iter().map(|(h, _)| h).collect();
    match vmalert_alerts(v) {
        Ok(got) => {
            let got: BTreeSet<(String, String)> =
                got.into_iter().filter(|(h, _)| hosts.contains(h)).collect();
            if got != want {
                problems.push(format!(
                    "alerts differ from those expected: missing {:?}, unexpected {:?}",
                    want.difference(&got).collect::<Vec<_>>(),
                    got.difference(&want).collect::<Vec<_>>()
                ));
            }
        }
        Err(e) => problems.push(e),
    }
    problems
}
