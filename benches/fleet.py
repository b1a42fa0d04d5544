#!/usr/bin/env python3
"""A simulated GPU fleet, measured through one real Prometheus and through VictoriaMetrics.

    bash benches/fleet.sh                        # 140 nodes, 1,000 GPUs, 10 min per configuration
    bash benches/fleet.sh --nodes 14 --duration 120 --configs default
    bash benches/fleet.sh --short --check        # CI: 3 nodes, 2 s scrapes, about a minute; asserts
    bash benches/fleet.sh --before REV --duration 180   # rule evaluation: REV against the working tree

For each configuration (`default`: no flag; `dcgm-4.8.2`: `--compatibility dcgm-4.8.2`;
`per-link`: `--nvlink-links per-link`; `totals`: `--nvlink-links totals`) it starts, in a
temporary directory of its own:

- N exporters, each a separate `gpu-exporter --simulate FILE --simulate-seed S` process on
  127.0.0.1, FILE a copy of a built-in scenario (`scenarios/*.toml`) whose `node` is this node's
  name (GPU UUIDs derive from it, so they are unique in the fleet, as on real hardware), with
  NODE_NAME set to it too. The scenarios are taken in turn from --mix; the nodes are spread
  over --clusters clusters (a `cluster` target label);
- VictoriaMetrics (Debian's `victoria-metrics`, `-search.latencyOffset=0s`);
- Prometheus (Debian's `prometheus`) scraping every node every --scrape-interval with
  alerts/gpu-exporter.rules.yaml (with --group-interval S, and with --short at the scrape
  interval, a copy in which the groups that run every minute run every S seconds, so that a
  40 s run evaluates them), and sending everything (rule results included) to
  VictoriaMetrics by `remote_write`.

After --duration seconds it records: Prometheus's head series, RSS (last and peak), samples
appended per second, bytes per sample on disk (the head written as a block by the admin
snapshot API, over the samples in it), then stops the exporters and times every panel query
of every dashboards/*.json (range queries over the whole run, instant ones at its end) in both
engines,
and whether every rule expression evaluates in VictoriaMetrics. It compares the metric names
present and a handful of spot values at one timestamp between the two.

With --check it fails (exit 1) when: a target is down; a metric name is in one engine and not
the other; a spot value differs by more than --tolerance; a dashboard or rule query errors in
either engine; a query returns data in one engine and not the other; a panel of the fleet
overview returns nothing; a dashboard returns no data at all. Results go to --json as well.

Rule evaluation: during the run's last --rules-tail part (half by default) it reads every
rule group's `prometheus_rule_group_last_duration_seconds` (with its last evaluation's
timestamp, so each evaluation counts once) and every rule's `evaluationTime` from
/api/v1/rules, and averages them; the sum over the groups of their share of one interval
(a group's mean times the interval over its own, for groups evaluated at least every minute;
the 5-minute right-sizing group is listed apart) is the rules' cost per interval. At the end it asks each rule's expression once with query
statistics: the series it returns and the samples it reads. It prints the costliest
--top-rules rules.

Before and after (the A/B mode), for a change to the rules or to the series they read:

    python3 benches/fleet.py --before f4f9c5a --duration 180 --rounds 2 --json /tmp/rules-ab.json

runs the fleet --rounds times with REV's exporter, scenarios and alerts/gpu-exporter.rules.yaml
and --rounds times with the working tree's, alternating (before first in odd rounds, after
first in even ones), Prometheus only, no dashboards or snapshot, and prints per group and for
the sum per interval the min / median / max over the rounds of each side and after / before
of the medians, the pairwise ratio of each round's sums, the load average and Prometheus's
CPU while averaging, and the costliest rules of both sides. REV is extracted by `git archive`
into target/fleet-ab/src/COMMIT and built with `cargo build --release --workspace` into the
target folder target/fleet-ab/cargo (once per commit: the exporter and its simulated
libraries are kept in target/fleet-ab/bin/COMMIT); the working tree is built the same way
each time (an up-to-date build takes seconds), so both sides are release builds from one
toolchain. --before-bin PATH (an exporter with its libnvml_sim.so beside it) and
--before-rules PATH replace REV's build and rules file (without --before, both are needed,
and the working tree's scenarios are used); --bin PATH replaces the working tree's build.
The runs share the machine with whatever else runs on it: compare the sides of one A/B run,
not figures of different runs.

Standard library only; Linux (/proc) only.
"""

import argparse
import datetime
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG_FLAGS = {
    "default": [],
    "dcgm-4.8.2": ["--compatibility", "dcgm-4.8.2"],
    "per-link": ["--nvlink-links", "per-link"],
    "totals": ["--nvlink-links", "totals"],
}
# 2 x hgx-h200 + 2 x hgx-b200 + 2 x h100-mig (8 GPUs each) + 1 x a100-mig-t4 (2 GPUs): 50 GPUs
# every 7 nodes, so 140 nodes are 1,000 GPUs.
# Groups evaluated at most this often (seconds) count in the rules' cost per interval at their
# share (mean × interval / their interval); slower ones are listed apart.
SHARED_MAX_S = 60
DEFAULT_MIX = "hgx-h200,hgx-b200,h100-mig,hgx-h200,hgx-b200,h100-mig,a100-mig-t4"
FLEET_DASHBOARD = "gpu-fleet.json"
GROUP_INTERVAL = re.compile(r"^(\s*- name: (gpu-exporter\.\S+)\n\s*interval: )(\d+)([smh])$", re.M)
# Each engine gives up on one query after this (an error in the results, a problem for --check).
QUERY_TIMEOUT = "60s"
# Spot values compared between the engines at one timestamp.
SPOT_QUERIES = [
    "count(gpu_device_up)",
    "sum(DCGM_FI_DEV_GPU_TEMP)",
    "sum(DCGM_FI_DEV_FB_USED)",
    "sum(DCGM_FI_DEV_POWER_USAGE)",
    "count(gpu_allocation_info)",
    "sum(namespace:accelerator_allocated_gpus:sum)",
    "sum(cluster:accelerator_gpus:count)",
    "sum(cluster:accelerator_idle_allocated_gpus:sum)",
]


def log(msg):
    print(f"fleet: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# HTTP


def http(port, path, params=None, method="GET", timeout=120):
    url = f"http://127.0.0.1:{port}{path}"
    data = None
    if params:
        if method == "GET":
            url += "?" + urllib.parse.urlencode(params)
        else:
            data = urllib.parse.urlencode(params).encode()
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def api(port, path, params=None, method="GET"):
    """(data, error) of a Prometheus-style API call, and its wall time in seconds."""
    t0 = time.monotonic()
    try:
        code, body = http(port, path, params, method)
    except OSError as e:
        return None, f"{path}: {e}", time.monotonic() - t0
    took = time.monotonic() - t0
    try:
        j = json.loads(body)
    except ValueError:
        return None, f"{path}: HTTP {code}, not JSON: {body[:200]!r}", took
    if j.get("status") != "success":
        return None, f"{j.get('errorType', 'error')}: {j.get('error', body[:200])}", took
    return j.get("data"), None, took


def _port_candidates():
    """Ports below the kernel's ephemeral range (ip_local_port_range), from 20000 up. A port the
    kernel hands out for `bind(port 0)` or an outgoing connection is never one of these, so a
    port chosen here stays free until its process binds it: the exporters' own simulated API
    servers bind port 0, and Prometheus's scrapes connect out, while later nodes start. (A port
    taken from the ephemeral range was, once in a 140-node run, taken by another node's
    simulated API server before its exporter bound it.)"""
    try:
        low = int(pathlib.Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    start = 20000 if low > 21000 else 1025
    return iter(range(start, low))


_PORTS = _port_candidates()


def free_port():
    """A port no process holds now and this run has not used, outside the ephemeral range."""
    for port in _PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit("fleet: no free port left below the ephemeral range")


def wait_http(port, path, proc, name, within, log=None):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if http(port, path, timeout=2)[0] == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None:
            tail = ""
            if log is not None:
                try:
                    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
                    tail = "; its log ends:\n" + "\n".join(lines[-5:])
                except OSError:
                    pass
            raise SystemExit(f"fleet: {name} exited ({proc.returncode}) before {path} answered{tail}")
        time.sleep(0.2)
    raise SystemExit(f"fleet: {name}: {path} on port {port} not ready within {within} s")


def metrics(port):
    """Prometheus text exposition at /metrics → {name{labels}: value} (no comments)."""
    _, body = http(port, "/metrics", timeout=30)
    out = {}
    for line in body.decode(errors="replace").splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def metric_sum(m, name):
    return sum(v for k, v in m.items() if k == name or k.startswith(name + "{"))


def rss_bytes(pid):
    """(VmRSS, VmHWM) of a process in bytes."""
    vals = {}
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def cpu_seconds(pid):
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def dir_bytes(path):
    return sum(p.stat().st_size for p in pathlib.Path(path).rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------------------
# Dashboards


def dashboard_queries(step_s, range_s):
    """[(dashboard file, panel title, refId, expr, is_range)] of every dashboards/*.json, with
    its $variables resolved: label matchers match everything, Grafana's built-ins get the
    run's step and range."""
    builtins = {
        "__rate_interval": f"{max(4 * step_s, 60)}s",
        "__interval": f"{step_s}s",
        "__interval_ms": str(step_s * 1000),
        "__range": f"{range_s}s",
        "__range_s": str(range_s),
        "__range_ms": str(range_s * 1000),
    }
    out = []
    for path in sorted((ROOT / "dashboards").glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        subst = dict(builtins)
        for v in d.get("templating", {}).get("list", []):
            if v.get("type") in ("query", "custom", "textbox"):
                subst[v["name"]] = ".*"
        stack = list(d.get("panels", []))
        while stack:
            p = stack.pop(0)
            stack.extend(p.get("panels", []))
            if p.get("type") in ("row", "text"):
                continue
            for t in p.get("targets", []):
                if "expr" not in t:
                    continue
                expr = re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)",
                              lambda m: subst.get(m.group(1) or m.group(2), m.group(0)), t["expr"])
                out.append((path.name, p.get("title", ""), t.get("refId", "?"), expr,
                            bool(t.get("range")) and not t.get("instant", False)))
    return out


def run_query(port, expr, is_range, start, end, step_s):
    """(number of series, error, seconds) of one query."""
    if is_range:
        data, err, took = api(port, "/api/v1/query_range",
                              {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                               "step": f"{step_s}s", "timeout": QUERY_TIMEOUT}, method="POST")
    else:
        data, err, took = api(port, "/api/v1/query",
                              {"query": expr, "time": f"{end:.3f}", "timeout": QUERY_TIMEOUT}, method="POST")
    if err:
        return 0, err, took
    result = data.get("result")
    if data.get("resultType") == "scalar":
        return 1, None, took
    return len(result or []), None, took


def instant_values(port, expr, ts):
    """{labels as a sorted tuple: value} of an instant query at ts, or an error string."""
    data, err, _ = api(port, "/api/v1/query", {"query": expr, "time": f"{ts:.3f}"}, method="POST")
    if err:
        return err
    if data.get("resultType") == "scalar":
        return {(): float(data["result"][1])}
    return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in data["result"]}


# ---------------------------------------------------------------------------------------------
# Rule evaluation times


def rfc3339(text):
    """Seconds since the epoch of Prometheus's RFC 3339 time (nanoseconds cut to micro)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", text or "")
    if not m:
        return None
    frac = (m.group(2) or "0")[:6]
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(f"{m.group(1)}.{frac:0<6}{tz}").timestamp()


class RuleTimes:
    """Every evaluation of every rule group and rule that a run saw, once each (keyed by its
    evaluation time). Groups: Prometheus's own `prometheus_rule_group_last_duration_seconds`
    with `prometheus_rule_group_last_evaluation_timestamp_seconds`, read from its /metrics;
    rules: each rule's `evaluationTime` and `lastEvaluation` in /api/v1/rules (the time from
    the start of the rule's query to the commit of its results, the same span that a group's
    duration sums over its rules, which Prometheus runs one after another)."""

    GROUP_METRICS = {"prometheus_rule_group_last_duration_seconds": "duration",
                     "prometheus_rule_group_last_evaluation_timestamp_seconds": "ts",
                     "prometheus_rule_group_interval_seconds": "interval",
                     "prometheus_rule_group_iterations_missed_total": "missed"}

    def __init__(self):
        self.groups = {}  # group name: {evaluation time: seconds}
        self.intervals = {}  # group name: seconds
        self.rules = {}  # (group, index): {"name", "type", "query", "evals": {time: seconds}}
        self.missed = {}  # group name: [(time read, iterations missed so far)]

    def add_metrics(self, m, now=None):
        seen = {}
        for key, value in m.items():
            name, _, labels = key.partition("{")
            field = self.GROUP_METRICS.get(name)
            g = re.search(r'rule_group="([^"]*)"', labels) if field else None
            if g:
                seen.setdefault(g.group(1).rpartition(";")[2], {})[field] = value
        for group, v in seen.items():
            if "interval" in v:
                self.intervals[group] = v["interval"]
            if v.get("ts", 0) > 0 and "duration" in v:
                self.groups.setdefault(group, {})[v["ts"]] = v["duration"]
            if "missed" in v:
                self.missed.setdefault(group, []).append((now or time.time(), v["missed"]))

    def add_rules_api(self, data):
        for g in data.get("groups", []):
            for i, r in enumerate(g.get("rules", [])):
                row = self.rules.setdefault((g["name"], i), {
                    "name": r.get("name", "?"), "type": r.get("type", "?"), "query": r.get("query", ""),
                    "evals": {}})
                ts = rfc3339(r.get("lastEvaluation"))
                if ts and ts > 0:
                    row["evals"][ts] = r.get("evaluationTime", 0.0)

    @staticmethod
    def _within(evals, since, until):
        vals = [d for t, d in sorted(evals.items()) if since <= t <= until]
        return (round(statistics.mean(vals), 5) if vals else None), len(vals), (round(min(vals), 5) if vals else None)

    def summary(self, since, until, interval):
        """Per group and per rule: the mean duration of the evaluations from `since` to
        `until`; per group its share of one `interval` (the global evaluation_interval): the
        mean times interval / the group's own interval, for the groups evaluated at most every
        SHARED_MAX_S seconds (a group run every minute costs a quarter of its evaluation per
        15 s); their sum, the cost of one interval. Slower groups (right-sizing, every 5
        minutes, reading a day) are listed apart."""
        groups = {}
        for g, evals in sorted(self.groups.items()):
            mean, n, least = self._within(evals, since, until)
            # Iterations Prometheus skipped because the group's last one overran its interval:
            # the machine (or the rules) cannot keep up, and the durations measure the queue.
            seen = [v for t, v in self.missed.get(g, []) if since <= t <= until]
            every = self.intervals.get(g)
            share = (round(mean * interval / every, 5)
                     if mean is not None and every and every <= SHARED_MAX_S else None)
            groups[g] = {"interval_s": every, "mean_s": mean, "min_s": least, "share_s": share,
                         "evaluations": n, "evaluations_in_run": len(evals),
                         "iterations_missed": int(seen[-1] - seen[0]) if seen else None}
        per_interval = [v["share_s"] for v in groups.values() if v["share_s"] is not None]
        rules = []
        for (g, i), r in sorted(self.rules.items()):
            mean, n, least = self._within(r["evals"], since, until)
            rules.append({"group": g, "index": i, "name": r["name"], "type": r["type"],
                          "mean_s": mean, "min_s": least, "evaluations": n, "query": r["query"]})
        return {"groups": groups, "sum_per_interval_s": round(sum(per_interval), 5), "rules": rules}


def rule_series(port, rules, ts):
    """Each rule's expression asked once at `ts` with query statistics: the series it returns
    and the samples it reads (Prometheus's totalQueryableSamples)."""
    for r in rules:
        data, err, took = api(port, "/api/v1/query", {"query": r["query"], "time": f"{ts:.3f}",
                                                      "stats": "all", "timeout": QUERY_TIMEOUT}, method="POST")
        if err:
            r["query_error"] = err
            continue
        res = data.get("result")
        r["series_out"] = 1 if data.get("resultType") == "scalar" else len(res or [])
        stats = data.get("stats") or {}
        r["samples_read"] = (stats.get("samples") or {}).get("totalQueryableSamples")
        r["query_eval_s"] = (stats.get("timings") or {}).get("evalTotalTime")


# ---------------------------------------------------------------------------------------------
# The fleet


class Side:
    """What one fleet runs: the exporter binary (its simulated libraries next to it), the rules
    file Prometheus loads and the scenarios folder the nodes are copied from. `label` is its
    role ("before", "after"; "" for a plain run), `name` what it is (a revision, "working
    tree"), `rev` the full commit id where there is one."""

    def __init__(self, label, bin, rules, scenarios, name="", rev=None):
        self.label, self.bin, self.rules, self.scenarios = label, bin, rules, scenarios
        self.name, self.rev = name, rev

    def describe(self):
        return {"label": self.label, "name": self.name, "bin": str(self.bin), "rules": str(self.rules),
                "scenarios": str(self.scenarios), "rev": self.rev}


class Processes:
    """The processes of one run, each logging to `<dir>/<name>.log`: started by `spawn`, ended
    by `stop` (SIGTERM, then SIGKILL after `STOP_GRACE` seconds), which also removes `dir`
    unless `--keep`. A subclass sets `args`, `dir` and `procs`."""

    STOP_GRACE = 10

    def spawn(self, name, cmd, env=None):
        logf = open(self.dir / f"{name}.log", "wb")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                             env=env, cwd=self.dir)
        logf.close()
        self.procs.append((name, p))
        return p

    def stop(self):
        for _, p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.STOP_GRACE
        for _, p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            log(f"kept {self.dir}")


class Fleet(Processes):
    def __init__(self, args, config, side):
        self.args = args
        self.config = config
        self.side = side
        tag = f"{config}-{side.label}-" if side.label else f"{config}-"
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"fleet-{tag}"))
        self.procs = []  # (name, Popen)
        self.nodes = []  # (name, cluster, scenario, port, gpus)


    def stop_exporters(self):
        for name, p in self.procs:
            if name not in ("prometheus", "victoria-metrics") and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for name, p in self.procs:
            if name not in ("prometheus", "victoria-metrics"):
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def start_exporters(self):
        mix = [s.strip() for s in self.args.mix.split(",") if s.strip()]
        env = {k: v for k, v in os.environ.items()
               if k not in ("RUST_LOG", "GPU_EXPORTER_SIMULATE", "DCGM_EXPORTER_COLLECTORS")
               and not k.startswith("GPU_EXPORTER_")}
        scen_dir = self.dir / "scenarios"
        scen_dir.mkdir()
        waits = []
        for i in range(self.args.nodes):
            scenario = mix[i % len(mix)]
            cluster = f"fleet-{chr(ord('a') + i % self.args.clusters)}"
            name = f"{cluster}-{scenario}-{i:03d}"
            src = pathlib.Path(self.side.scenarios) / f"{scenario}.toml"
            try:
                text = src.read_text(encoding="utf-8")
            except OSError as e:
                raise SystemExit(f"fleet: --mix: scenario {scenario!r}: {e}")
            text, n = re.subn(r'(?m)^node = ".*"$', f'node = "{name}"', text, count=1)
            if n != 1:
                raise SystemExit(f"fleet: {src} has no top-level `node = \"…\"` line")
            gpus = len(re.findall(r"(?m)^\[\[gpus\]\]", text))
            path = scen_dir / f"{name}.toml"
            path.write_text(text, encoding="utf-8")
            port = free_port()
            cmd = [str(self.side.bin), "--simulate", str(path), "--simulate-seed", str(i + 1),
                   "-a", f"127.0.0.1:{port}"] + self.args.exporter_flags + CONFIG_FLAGS[self.config]
            p = self.spawn(name, cmd, dict(env, NODE_NAME=name))
            self.nodes.append((name, cluster, scenario, port, gpus))
            waits.append((port, p, name))
        for port, p, name in waits:
            wait_http(port, "/ready", p, name, 600, self.dir / f"{name}.log")

    def start_vm(self):
        self.vm_port = free_port()
        self.vm = self.spawn("victoria-metrics", [
            self.args.victoria_metrics, f"-storageDataPath={self.dir / 'vm'}",
            f"-httpListenAddr=127.0.0.1:{self.vm_port}", "-search.latencyOffset=0s",
            "-search.disableCache", "-retentionPeriod=1", "-loggerLevel=ERROR"])
        wait_http(self.vm_port, "/health", self.vm, "victoria-metrics", 60,
                  self.dir / "victoria-metrics.log")

    def rules_file(self):
        """The side's rules, or with --group-interval a copy whose groups that set their own
        interval of at most SHARED_MAX_S run every --group-interval seconds instead."""
        a = self.args
        if not a.group_interval:
            return self.side.rules
        text = self.side.rules.read_text()
        unit = {"s": 1, "m": 60, "h": 3600}

        def shorten(m):
            every = int(m.group(3)) * unit[m.group(4)]
            return f"{m.group(1)}{a.group_interval}s" if every <= SHARED_MAX_S else m.group(0)
        copy, n = GROUP_INTERVAL.subn(shorten, text)
        if not n:
            raise SystemExit(f"fleet: --group-interval: {self.side.rules}: no group sets its own `interval:`")
        out = self.dir / "rules.yaml"
        out.write_text(copy)
        return out

    def start_prometheus(self):
        a = self.args
        groups = {}
        for name, cluster, _, port, _ in self.nodes:
            groups.setdefault(cluster, []).append(f'"127.0.0.1:{port}"')
        static = "".join(f"      - targets: [{', '.join(t)}]\n        labels: {{cluster: {c}}}\n"
                         for c, t in sorted(groups.items()))
        remote = (f"remote_write:\n  - url: http://127.0.0.1:{self.vm_port}/api/v1/write\n"
                  if a.vm else "")
        config = (f"global:\n  scrape_interval: {a.scrape_interval}s\n"
                  f"  scrape_timeout: {min(a.scrape_interval, 10)}s\n"
                  f"  evaluation_interval: {a.scrape_interval}s\n"
                  f"rule_files:\n  - {json.dumps(str(self.rules_file()))}\n"
                  f"scrape_configs:\n  - job_name: gpu-exporter\n    static_configs:\n{static}{remote}")
        (self.dir / "prometheus.yml").write_text(config)
        self.prom_port = free_port()
        self.prom = self.spawn("prometheus", [
            a.prometheus, f"--config.file={self.dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.dir / 'prometheus'}",
            f"--web.listen-address=127.0.0.1:{self.prom_port}", "--web.enable-admin-api",
            "--log.level=warn"])
        wait_http(self.prom_port, "/-/ready", self.prom, "prometheus", 60, self.dir / "prometheus.log")

    def exporter_cpu(self):
        return sum(cpu_seconds(p.pid) for n, p in self.procs if n not in ("prometheus", "victoria-metrics"))


def run(args, config, side, full=True):
    """One fleet run. `full`: also the dashboards, VictoriaMetrics and the snapshot; without it
    (the A/B mode) only the scrape, series and rule figures."""
    f = Fleet(args, config, side)
    res = {"config": config, "side": side.describe(), "flags": CONFIG_FLAGS[config], "nodes": args.nodes,
           "scrape_interval_s": args.scrape_interval, "duration_s": args.duration}
    problems = []
    times = RuleTimes()
    try:
        t0 = time.monotonic()
        f.start_exporters()
        res["gpus"] = sum(n[4] for n in f.nodes)
        res["scenarios"] = {s: sum(1 for n in f.nodes if n[2] == s) for s in {n[2] for n in f.nodes}}
        log(f"{config}: {args.nodes} exporters ready ({res['gpus']} GPUs) in {time.monotonic() - t0:.0f} s")
        if args.vm:
            f.start_vm()
        f.start_prometheus()
        start = time.time()
        # Rule evaluations are averaged from here on (the run's last --rules-tail part).
        tail_start = start + args.duration * (1 - args.rules_tail)
        cpu0, load0 = f.exporter_cpu(), os.getloadavg()
        samples, peak, loads, prom_cpu = [], 0, [], []
        # Polled a few times per evaluation interval, so that every group's and every rule's
        # evaluation is seen (each is kept once, by its timestamp).
        poll = max(1.0, args.scrape_interval / 3)
        while True:
            now = time.time()
            rss, hwm = rss_bytes(f.prom.pid)
            peak = max(peak, hwm)
            try:
                m = metrics(f.prom_port)
                samples.append((now, metric_sum(m, "prometheus_tsdb_head_samples_appended_total")))
                times.add_metrics(m, now)
            except OSError as e:  # an overloaded machine: skip this sample
                log(f"{config}: Prometheus /metrics: {e}")
            if now >= tail_start:
                prom_cpu.append((now, cpu_seconds(f.prom.pid)))
            if now >= tail_start - args.scrape_interval:
                loads.append(os.getloadavg()[0])
                data, err, _ = api(f.prom_port, "/api/v1/rules")
                if not err:
                    times.add_rules_api(data)
            left = start + args.duration - now
            if left <= 0:
                break
            time.sleep(min(poll, left))
            if f.prom.poll() is not None:
                raise SystemExit("fleet: prometheus exited during the run")
        end = time.time()
        res["load_average_1m_5m_15m"] = [round(x, 2) for x in os.getloadavg()]
        # The 1-minute load average over the part whose rule evaluations are averaged.
        res["load_average_1m_during_tail"] = ({"min": round(min(loads), 2), "mean": round(statistics.mean(loads), 2),
                                               "max": round(max(loads), 2)} if loads else None)
        # Prometheus's CPU over the same part: scrapes, rules and appends together.
        if len(prom_cpu) >= 2 and prom_cpu[-1][0] > prom_cpu[0][0]:
            res["prometheus_cpu_cores_during_tail"] = round(
                (prom_cpu[-1][1] - prom_cpu[0][1]) / (prom_cpu[-1][0] - prom_cpu[0][0]), 3)
        res["exporters_cpu_cores"] = round((f.exporter_cpu() - cpu0) / (end - start), 3)
        res["exporter_rss_mib_avg"] = round(statistics.mean(
            rss_bytes(p.pid)[0] for n, p in f.procs if n not in ("prometheus", "victoria-metrics")) / 2**20, 1)
        m = metrics(f.prom_port)
        res["head_series"] = int(metric_sum(m, "prometheus_tsdb_head_series"))
        res["prometheus_rss_mib"] = round(rss_bytes(f.prom.pid)[0] / 2**20, 1)
        res["prometheus_rss_peak_mib"] = round(max(peak, rss_bytes(f.prom.pid)[1]) / 2**20, 1)
        # The share of scrapes that succeeded: below 1 when the machine cannot keep up.
        ok = instant_values(f.prom_port, f'avg(avg_over_time(up{{job="gpu-exporter"}}[{int(end - start)}s]))', end)
        res["scrapes_succeeded"] = round(next(iter(ok.values()), 0), 3) if isinstance(ok, dict) else ok
        # Samples per second, after the first two scrape intervals (series creation).
        steady = [s for s in samples if s[0] >= start + 2 * args.scrape_interval]
        if len(steady) < 2:  # a run of two intervals or less: all of it
            steady = samples
        if len(steady) >= 2 and steady[-1][0] > steady[0][0]:
            res["samples_per_second"] = round((steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0]), 1)
        res["samples_appended"] = int(samples[-1][1]) if samples else None
        up = instant_values(f.prom_port, 'sum(up{job="gpu-exporter"})', end)
        res["targets_up"] = int(next(iter(up.values()), 0)) if isinstance(up, dict) else up
        if res["targets_up"] != args.nodes:
            problems.append(f"{res['targets_up']} of {args.nodes} targets up")

        # The exporters stop here, so that the query timings below do not compete with 140
        # processes for a small machine's cores; their samples stay in both engines.
        f.stop_exporters()

        # Rule evaluation cost in Prometheus, and the rules' expressions.
        data, err, _ = api(f.prom_port, "/api/v1/rules")
        rules = []
        if err:
            problems.append(f"Prometheus /api/v1/rules: {err}")
        else:
            res["rule_groups_eval_seconds"] = {g["name"]: round(g.get("evaluationTime", 0), 4)
                                               for g in data["groups"]}
            for g in data["groups"]:
                for r in g["rules"]:
                    rules.append((r.get("name", "?"), r["query"]))
                    if r.get("health") == "unknown" and g.get("interval", 0) > args.duration:
                        # A group that runs less often than the run lasts (right-sizing, every
                        # 5 minutes) may not have run yet: its expression is asked instead.
                        _, qerr, _ = api(f.prom_port, "/api/v1/query", {"query": r["query"]})
                        if qerr:
                            problems.append(f"Prometheus rule {r.get('name')} (group every {g['interval']}s, asked): {qerr}")
                    elif r.get("health") != "ok":
                        problems.append(f"Prometheus rule {r.get('name')}: {r.get('health')} {r.get('lastError', '')}")

        # Each group's and each rule's evaluation time over the run's last part, and what
        # each rule's expression returns and reads at the run's end.
        rt = times.summary(tail_start, end, args.scrape_interval)
        rule_series(f.prom_port, rt["rules"], end - args.scrape_interval)
        res["rule_evaluation"] = rt
        for g, v in rt["groups"].items():
            if v["iterations_missed"]:
                problems.append(f"rule group {g} missed {v['iterations_missed']} evaluations while they were "
                                "averaged (an evaluation overran its interval): the times measure a machine "
                                "that cannot keep up")

        if full:
            # Every panel query in each engine.
            step = args.scrape_interval
            queries = dashboard_queries(step, max(int(end - start), step))
            engines = [("prometheus", f.prom_port)] + ([("victoriametrics", f.vm_port)] if args.vm else [])
            if args.vm:
                time.sleep(min(2 * args.scrape_interval, 30))  # remote_write catches up
            res["dashboards"] = {}
            per_query = []
            for engine, port in engines:
                log(f"{config}: {len(queries)} panel queries in {engine}")
                for dash, title, ref, expr, is_range in queries:
                    n, err, took = run_query(port, expr, is_range, start, end, step)
                    per_query.append({"engine": engine, "dashboard": dash, "panel": title, "refId": ref,
                                      "range": is_range, "series": n, "error": err, "seconds": round(took, 4)})
                    if err:
                        problems.append(f"{engine}: {dash} «{title}» {ref}: {err}: {expr}")
            for engine, _ in engines:
                for dash in sorted({q[0] for q in queries}):
                    rows = [q for q in per_query if q["engine"] == engine and q["dashboard"] == dash]
                    times = [q["seconds"] for q in rows]
                    slowest = max(rows, key=lambda q: q["seconds"])
                    res["dashboards"].setdefault(dash, {})[engine] = {
                        "queries": len(rows), "with_data": sum(1 for q in rows if q["series"]),
                        "total_s": round(sum(times), 3), "median_s": round(statistics.median(times), 4),
                        "max_s": slowest["seconds"], "slowest": f"{slowest['panel']} {slowest['refId']}"}
                    if not any(q["series"] for q in rows):
                        problems.append(f"{engine}: {dash}: no panel query returns data")
                    if dash == FLEET_DASHBOARD:
                        for q in rows:
                            if not q["series"] and not q["error"]:
                                problems.append(f"{engine}: {dash} «{q['panel']}» {q['refId']}: no data")
            res["queries"] = per_query
            if args.vm:
                by_key = {}
                for q in per_query:
                    by_key.setdefault((q["dashboard"], q["panel"], q["refId"]), {})[q["engine"]] = q
                for (dash, title, ref), e in sorted(by_key.items()):
                    p, v = e["prometheus"], e["victoriametrics"]
                    if bool(p["series"]) != bool(v["series"]) and not p["error"] and not v["error"]:
                        problems.append(f"{dash} «{title}» {ref}: {p['series']} series in Prometheus, "
                                        f"{v['series']} in VictoriaMetrics")
                check_vm(f, res, rules, end, problems)
            snapshot_size(f, res, problems)
    finally:
        f.stop()
    res["problems"] = problems
    return res


def check_vm(f, res, rules, end, problems):
    """Rule expressions, metric names and spot values in VictoriaMetrics against Prometheus."""
    ts = end - 2 * f.args.scrape_interval
    rule_rows = []
    for name, expr in rules:
        p = instant_values(f.prom_port, expr, ts)
        v = instant_values(f.vm_port, expr, ts)
        rule_rows.append({"rule": name, "prometheus": len(p) if isinstance(p, dict) else p,
                          "victoriametrics": len(v) if isinstance(v, dict) else v})
        if isinstance(v, str):
            problems.append(f"VictoriaMetrics: rule {name}: {v}: {expr}")
        elif isinstance(p, dict) and bool(p) != bool(v):
            problems.append(f"rule {name}: {len(p)} series in Prometheus, {len(v)} in VictoriaMetrics: {expr}")
    res["rules_in_victoriametrics"] = rule_rows
    # The same metric names (raw and recorded) in both.
    names = {}
    for engine, port in (("prometheus", f.prom_port), ("victoriametrics", f.vm_port)):
        v = instant_values(port, 'count by (__name__) ({__name__=~".+"})', ts)
        names[engine] = {dict(k).get("__name__", "") for k in v} if isinstance(v, dict) else set()
        if isinstance(v, str):
            problems.append(f"{engine}: metric names: {v}")
    res["metric_names"] = {k: len(v) for k, v in names.items()}
    for only, a, b in (("Prometheus", "prometheus", "victoriametrics"),
                       ("VictoriaMetrics", "victoriametrics", "prometheus")):
        missing = sorted(names[a] - names[b])
        if missing:
            problems.append(f"only in {only}: {', '.join(missing[:20])}{' …' if len(missing) > 20 else ''}")
    spots = []
    for q in SPOT_QUERIES:
        p = instant_values(f.prom_port, q, ts)
        v = instant_values(f.vm_port, q, ts)
        pv = next(iter(p.values()), None) if isinstance(p, dict) else None
        vv = next(iter(v.values()), None) if isinstance(v, dict) else None
        agree = pv is not None and vv is not None and abs(pv - vv) <= f.args.tolerance * max(abs(pv), abs(vv), 1e-9)
        spots.append({"query": q, "time": round(ts, 3), "prometheus": pv, "victoriametrics": vv, "agree": agree})
        if not agree:
            problems.append(f"spot value {q} at {ts:.0f}: Prometheus {p}, VictoriaMetrics {v}")
    res["spot_values"] = spots
    m = metrics(f.vm_port)
    res["victoriametrics_rss_mib"] = round(rss_bytes(f.vm.pid)[0] / 2**20, 1)
    http(f.vm_port, "/internal/force_flush")
    time.sleep(2)
    m = metrics(f.vm_port)
    rows = metric_sum(m, "vm_rows")
    size = metric_sum(m, "vm_data_size_bytes")
    res["victoriametrics_rows"] = int(rows)
    if rows:
        res["victoriametrics_bytes_per_sample"] = round(size / rows, 3)


def snapshot_size(f, res, problems):
    """Bytes per sample: Prometheus writes its head as a block (admin snapshot API); its
    chunks and index over the samples its meta.json counts."""
    data, err, took = api(f.prom_port, "/api/v1/admin/tsdb/snapshot", method="POST")
    if err:
        problems.append(f"snapshot: {err}")
        return
    snap = f.dir / "prometheus" / "snapshots" / data["name"]
    samples = size = 0
    for meta in snap.glob("*/meta.json"):
        samples += json.loads(meta.read_text())["stats"]["numSamples"]
        size += dir_bytes(meta.parent)
    res["snapshot_seconds"] = round(took, 2)
    res["block_bytes"] = size
    res["block_samples"] = samples
    res["wal_bytes"] = dir_bytes(f.dir / "prometheus" / "wal")
    if samples:
        res["bytes_per_sample"] = round(size / samples, 3)


# ---------------------------------------------------------------------------------------------
# Before and after: the rules (and exporter) of a revision against the working tree's

# The A/B mode's builds: the revision's sources (git archive), one cargo target folder for every
# build (dependencies compiled once), and each build's exporter with its simulated libraries.
AB_DIR = ROOT / "target" / "fleet-ab"
BUILD_OUTPUTS = ("gpu-exporter", "libnvml_sim.so", "libdcgm_sim.so", "dcgm-sim-hostengine")


def git(*argv):
    r = subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"fleet: git {' '.join(argv)}: {r.stderr.strip()}")
    return r.stdout.strip()


def build_tree(src, out, what):
    """`cargo build --release --workspace --lib --bins` in `src` (target folder AB_DIR/cargo),
    then the exporter and its simulated libraries copied into `out`."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(AB_DIR / "cargo"))
    log(f"building {what}: cargo build --release in {src}")
    t0 = time.monotonic()
    r = subprocess.run(["cargo", "build", "--release", "--workspace", "--lib", "--bins"], cwd=src, env=env,
                       stdin=subprocess.DEVNULL)
    if r.returncode:
        raise SystemExit(f"fleet: building {what}: cargo build --release in {src} failed ({r.returncode})")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in BUILD_OUTPUTS:
        built = AB_DIR / "cargo" / "release" / name
        if built.exists():
            shutil.copy2(built, tmp / name)
    if not (tmp / "gpu-exporter").exists():
        raise SystemExit(f"fleet: building {what}: no gpu-exporter in {AB_DIR / 'cargo' / 'release'}")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"built {what} in {time.monotonic() - t0:.0f} s: {out / 'gpu-exporter'}")
    return out / "gpu-exporter"


def checkout(rev):
    """(full commit id, folder with the revision's tracked files), extracted once by git archive."""
    sha = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    src = AB_DIR / "src" / sha
    if not (src / "Cargo.toml").exists():
        tmp = src.with_name(sha + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout)
        archive.stdout.close()
        if archive.wait() or untar.returncode:
            raise SystemExit(f"fleet: --before {rev}: git archive {sha} | tar -x failed")
        tmp.rename(src)
    return sha, src


def ab_sides(args):
    """The two sides of --before: (before, after) Side."""
    rev = sha = None
    scenarios, rules, before_bin = ROOT / "scenarios", args.before_rules, args.before_bin
    if args.before:
        sha, src = checkout(args.before)
        rev = f"{args.before} ({sha[:7]})" if not sha.startswith(args.before) else sha[:7]
        scenarios = src / "scenarios"
        rules = rules or src / "alerts" / "gpu-exporter.rules.yaml"
        if not before_bin:
            out = AB_DIR / "bin" / sha
            before_bin = out / "gpu-exporter" if (out / "gpu-exporter").exists() else build_tree(src, out, rev)
    if not rules or not before_bin:
        raise SystemExit("fleet: the A/B mode needs --before REV, or both --before-bin and --before-rules")
    if args.bin:
        after_bin = args.bin
    else:
        after_bin = build_tree(ROOT, AB_DIR / "bin" / "worktree", "the working tree")
    for what, path in (("--before-rules", rules), ("--before-bin", before_bin), ("--bin", after_bin)):
        if not pathlib.Path(path).is_file():
            raise SystemExit(f"fleet: {what}: {path}: no such file")
    before = Side("before", pathlib.Path(before_bin).resolve(), pathlib.Path(rules).resolve(), scenarios,
                  rev or str(rules), sha)
    after = Side("after", pathlib.Path(after_bin).resolve(), ROOT / "alerts" / "gpu-exporter.rules.yaml",
                 ROOT / "scenarios", "working tree")
    return before, after


def spread(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return {"min": round(min(vals), 4), "median": round(statistics.median(vals), 4), "max": round(max(vals), 4),
            "n": len(vals)}


def ab_summary(runs, interval):
    """Per group, for the sum per interval and per rule: min / median / max over the rounds of
    each side, and after / before of the medians (and of each round's pair, for the sum)."""
    sides = ("before", "after")
    by = {s: [r for r in runs if r["side"]["label"] == s] for s in sides}
    ev = {s: [r.get("rule_evaluation", {}) for r in by[s]] for s in sides}
    groups = sorted({g for s in sides for e in ev[s] for g in e.get("groups", {})})
    out = {"groups": {}, "rules": {}}
    for g in groups:
        row = {"interval_s": next((e["groups"][g]["interval_s"] for s in sides for e in ev[s]
                                   if g in e.get("groups", {})), None)}
        for s in sides:
            # A group's share of one interval (its mean where it is not in the sum).
            row[s] = spread([(lambda x: x.get("share_s") if x.get("share_s") is not None else x.get("mean_s"))(
                e.get("groups", {}).get(g, {})) for e in ev[s]])
            row[s + "_interval_s"] = next((e["groups"][g]["interval_s"] for e in ev[s]
                                           if g in e.get("groups", {})), None)
        row["ratio"] = ratio(row["before"], row["after"])
        out["groups"][g] = row
    out["sum_per_interval"] = {s: spread([e.get("sum_per_interval_s") for e in ev[s]]) for s in sides}
    out["sum_per_interval"]["ratio"] = ratio(out["sum_per_interval"]["before"], out["sum_per_interval"]["after"])
    pairs = [a.get("sum_per_interval_s") / b.get("sum_per_interval_s")
             for b, a in zip(ev["before"], ev["after"]) if b.get("sum_per_interval_s") and a.get("sum_per_interval_s")]
    out["sum_per_interval"]["ratio_per_round"] = spread(pairs)
    for s in sides:
        per_rule = {}
        for e in ev[s]:
            seen = {}
            for r in e.get("rules", []):
                if r["mean_s"] is not None:
                    key = f"{r['group']} {r['name']}"
                    seen[key] = seen.get(key, 0) + r["mean_s"]
            for k, v in seen.items():
                per_rule.setdefault(k, []).append(v)
        for k, vals in per_rule.items():
            out["rules"].setdefault(k, {})[s] = spread(vals)
    for k, row in out["rules"].items():
        row["ratio"] = ratio(row.get("before"), row.get("after"))
    for s in sides:
        out.setdefault("load_average_1m_during_tail", {})[s] = spread(
            [(r.get("load_average_1m_during_tail") or {}).get("mean") for r in by[s]])
        out.setdefault("head_series", {})[s] = spread([r.get("head_series") for r in by[s]])
        out.setdefault("prometheus_cpu_cores_during_tail", {})[s] = spread(
            [r.get("prometheus_cpu_cores_during_tail") for r in by[s]])
        out.setdefault("scrapes_succeeded", {})[s] = spread([r.get("scrapes_succeeded") for r in by[s]
                                                             if isinstance(r.get("scrapes_succeeded"), (int, float))])
    out["interval_s"] = interval
    return out


def ratio(before, after):
    if not before or not after or not before["median"]:
        return None
    return round(after["median"] / before["median"], 3)


def ab_report(summary, before, after, args, config):
    def fmt(x):
        return f"{x['min']:.3f} / {x['median']:.3f} / {x['max']:.3f}" if x else "–"
    lines = [f"Rule evaluation, {config}: before = {before.name} (its exporter and rules), after = the working "
             f"tree; {args.nodes} nodes, {args.duration} s per run, {args.rounds} runs each, alternating; "
             f"each figure the mean of a group's evaluations in the run's last {args.rules_tail:.0%}, "
             "then min / median / max over the runs (seconds):", "",
             "| Group | Before | After | After / before (medians) |", "|---|---|---|---|"]
    for g, row in summary["groups"].items():
        every = ""
        for side in ("before", "after"):
            i = row.get(side + "_interval_s")
            if i and i != summary["interval_s"]:
                every += (f" ({side}: every {i:.0f} s, {'its share of one interval' if i <= SHARED_MAX_S else 'not in the sum'})")
        lines.append(f"| {g}{every} | {fmt(row['before'])} | {fmt(row['after'])} | {row['ratio'] if row['ratio'] is not None else '–'} |")
    t = summary["sum_per_interval"]
    lines.append(f"| **sum per {summary['interval_s']} s interval** | {fmt(t['before'])} | {fmt(t['after'])} | "
                 f"{t['ratio'] if t['ratio'] is not None else '–'} |")
    rr = t.get("ratio_per_round")
    if rr:
        lines.append(f"\nafter / before of each round's sums: min {rr['min']:.3f}, median {rr['median']:.3f}, max {rr['max']:.3f}")
    la = summary["load_average_1m_during_tail"]
    hs = summary["head_series"]
    lines.append(f"1-minute load average while averaging (mean of each run; min / median / max): before {fmt(la['before'])}, "
                 f"after {fmt(la['after'])}")
    pc = summary["prometheus_cpu_cores_during_tail"]
    lines.append(f"Prometheus CPU while averaging (cores; scrapes, rules and appends): before {fmt(pc['before'])}, "
                 f"after {fmt(pc['after'])}")
    lines.append(f"head series: before {hs['before']['median']:,.0f}, " if hs["before"] else "head series: before –, ")
    lines[-1] += (f"after {hs['after']['median']:,.0f} (medians)" if hs["after"] else "after –")
    top = sorted(summary["rules"].items(), key=lambda kv: -max((kv[1].get(s) or {}).get("median", 0)
                                                                for s in ("before", "after")))[:args.top_rules]
    lines += ["", f"The {len(top)} costliest rules (median of the runs' means, seconds per evaluation):", "",
              "| Group, rule | Before | After | After / before |", "|---|---|---|---|"]
    for k, row in top:
        b, a = row.get("before"), row.get("after")
        lines.append(f"| {k} | {b['median']:.4f} | " if b else f"| {k} | – | ")
        lines[-1] += (f"{a['median']:.4f} | " if a else "– | ") + (f"{row['ratio']} |" if row["ratio"] is not None else "– |")
    return "\n".join(lines)


def rules_ab(args, configs):
    before, after = ab_sides(args)
    log(f"before: {before.bin} with {before.rules}; after: {after.bin} with {after.rules}")
    out = {"mode": "rules-ab", "before": before.describe(), "after": after.describe(), "rounds": args.rounds, "nodes": args.nodes,
           "duration_s": args.duration, "rules_tail": args.rules_tail, "configs": {}}
    reports, failed = [], False
    for c in configs:
        runs = []
        for i in range(args.rounds):
            # Before first in even rounds, after first in odd ones: a drift of the machine's
            # load over the session weighs on both sides alike.
            for side in ((before, after) if i % 2 == 0 else (after, before)):
                log(f"{c}: round {i + 1} of {args.rounds}, {side.label} ({side.name})")
                r = run(args, c, side, full=False)
                r["round"] = i + 1
                runs.append(r)
                ev = r.get("rule_evaluation", {})
                log(f"{c}: {side.label}: rule groups {ev.get('sum_per_interval_s')} s per interval, "
                    f"load {r.get('load_average_1m_during_tail')}, {len(r['problems'])} problems")
                summary = ab_summary(runs, args.scrape_interval)
                out["configs"][c] = {"summary": summary, "runs": runs}
                if args.json:
                    pathlib.Path(args.json).write_text(json.dumps(out, indent=1))
        reports.append(ab_report(out["configs"][c]["summary"], before, after, args, c))
        for r in runs:
            for p in r["problems"]:
                failed = True
                reports.append(f"  PROBLEM ({r['side']['label']}, round {r['round']}): {p}")
    print("\n\n".join(reports))
    return 1 if args.check and failed else 0


# ---------------------------------------------------------------------------------------------
# Report


def rule_table(rules, top):
    """The costliest rules of one run: seconds per evaluation, series returned, samples read."""
    rows = sorted((r for r in rules if r["mean_s"] is not None), key=lambda r: -r["mean_s"])[:top]
    lines = ["  | Group | Rule | Seconds per evaluation (mean, least) | Series out | Samples read |",
             "  |---|---|---|---|---|"]
    for r in rows:
        lines.append(f"  | {r['group'].rpartition('.')[2]} | {r['name']} | {r['mean_s']:.4f}, {r['min_s']:.4f} | "
                     f"{r.get('series_out', r.get('query_error', '?'))} | {r.get('samples_read', '?')} |")
    return "\n".join(lines)


def table(results):
    lines = ["| Configuration | Nodes | GPUs | Head series | Series per GPU | Prometheus RSS (peak) | "
             "Samples/s | Bytes/sample | Dashboards, all panels (Prometheus / VictoriaMetrics) | "
             "Fleet overview (Prometheus / VictoriaMetrics) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        def dash_total(engine, only=None):
            ds = r.get("dashboards", {})
            vals = [e[engine]["total_s"] for d, e in ds.items() if engine in e and (only is None or d == only)]
            return f"{sum(vals):.2f} s" if vals else "–"
        lines.append(
            f"| {r['config']} | {r['nodes']} | {r.get('gpus', '?')} | {r.get('head_series', '?'):,} | "
            f"{r.get('head_series', 0) / max(r.get('gpus', 1), 1):.0f} | "
            f"{r.get('prometheus_rss_mib', '?')} MiB ({r.get('prometheus_rss_peak_mib', '?')} MiB) | "
            f"{r.get('samples_per_second', '?'):,} | {r.get('bytes_per_sample', '?')} | "
            f"{dash_total('prometheus')} / {dash_total('victoriametrics')} | "
            f"{dash_total('prometheus', FLEET_DASHBOARD)} / {dash_total('victoriametrics', FLEET_DASHBOARD)} |")
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=int(os.environ.get("FLEET_NODES", 140)))
    ap.add_argument("--duration", type=int, default=int(os.environ.get("FLEET_DURATION", 600)),
                    help="seconds of scraping per configuration")
    ap.add_argument("--scrape-interval", type=int, default=int(os.environ.get("FLEET_SCRAPE_INTERVAL", 15)))
    ap.add_argument("--configs", default=os.environ.get("FLEET_CONFIGS"),
                    help="comma-separated (default: default,dcgm-4.8.2,per-link; with --before: default)")
    ap.add_argument("--mix", default=os.environ.get("FLEET_MIX", DEFAULT_MIX))
    ap.add_argument("--clusters", type=int, default=4)
    ap.add_argument("--bin", default=os.environ.get("FLEET_BIN"),
                    help="the exporter (default: target/debug/gpu-exporter; with --before: the working tree "
                         "built by cargo build --release)")
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    ap.add_argument("--victoria-metrics", default=shutil.which("victoria-metrics") or "victoria-metrics")
    ap.add_argument("--no-vm", dest="vm", action="store_false", help="Prometheus only")
    ap.add_argument("--exporter-flag", dest="exporter_flags", action="append", default=[],
                    help="an extra exporter argument (repeatable)")
    ap.add_argument("--tolerance", type=float, default=0.01, help="relative, for the spot values")
    ap.add_argument("--short", action="store_true",
                    help="CI: 3 nodes, 2 s scrapes, 40 s, the default configuration")
    ap.add_argument("--group-interval", type=int, metavar="S",
                    help="groups that set their own interval of at most a minute run every S seconds "
                         "(a copy of the rules; --short: the scrape interval, so that a 40 s run sees them)")
    ap.add_argument("--check", action="store_true", help="exit 1 on any problem")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ab = ap.add_argument_group("rule evaluation, before and after (the A/B mode)")
    ab.add_argument("--before", metavar="REV",
                    help="run the fleet alternately with REV's exporter and rules and with the working tree's, "
                         "and compare the rule groups' evaluation times (Prometheus only, no dashboards)")
    ab.add_argument("--before-bin", metavar="PATH",
                    help="the before side's exporter (its libnvml_sim.so beside it) instead of building REV's")
    ab.add_argument("--before-rules", metavar="PATH", help="the before side's rules file instead of REV's")
    ab.add_argument("--rounds", type=int, default=2, help="runs of each side (default 2)")
    ab.add_argument("--rules-tail", type=float, default=0.5,
                    help="the last part of each run whose rule evaluations are averaged (default 0.5)")
    ab.add_argument("--top-rules", type=int, default=15, help="rules listed, costliest first (default 15)")
    args = ap.parse_args(argv)
    ab_mode = bool(args.before or args.before_bin or args.before_rules)
    if args.configs is None:
        args.configs = "default" if ab_mode else "default,dcgm-4.8.2,per-link"
    if not 0 < args.rules_tail <= 1:
        raise SystemExit(f"fleet: --rules-tail {args.rules_tail}: a fraction in (0, 1]")
    if args.rounds < 1:
        raise SystemExit(f"fleet: --rounds {args.rounds}: at least 1")
    if args.short:
        args.nodes, args.duration, args.scrape_interval, args.clusters = 3, 40, 2, 2
        args.configs = "default"
        args.mix = "h100-mig,hgx-h200,a100-mig-t4"
        args.exporter_flags += ["-c", "1000"]
        args.group_interval = args.group_interval or args.scrape_interval
    if ab_mode:
        args.vm = False  # Prometheus's rule evaluation alone; no remote_write
    elif not args.bin:
        args.bin = str(ROOT / "target" / "debug" / "gpu-exporter")
    for tool in ((args.bin,) if args.bin else ()) + (args.prometheus,) + ((args.victoria_metrics,) if args.vm else ()):
        if not shutil.which(tool):
            raise SystemExit(f"fleet: {tool}: not found or not executable (see --help)")
    if args.bin:
        args.bin = os.path.abspath(shutil.which(args.bin))
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    for c in configs:
        if c not in CONFIG_FLAGS:
            raise SystemExit(f"fleet: --configs: unknown configuration {c!r} (known: {', '.join(CONFIG_FLAGS)})")
    if ab_mode:
        return rules_ab(args, configs)
    side = Side("", pathlib.Path(args.bin), ROOT / "alerts" / "gpu-exporter.rules.yaml", ROOT / "scenarios")
    results = []
    for c in configs:
        r = run(args, c, side)
        results.append(r)
        log(f"{c}: {r.get('head_series')} head series, Prometheus RSS {r.get('prometheus_rss_mib')} MiB, "
            f"{r.get('samples_per_second')} samples/s, {r.get('bytes_per_sample')} bytes/sample, "
            f"{len(r['problems'])} problems")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    print(table(results))
    for r in results:
        print(f"\n{r['config']}: load average {r.get('load_average_1m_5m_15m')}, exporters "
              f"{r.get('exporters_cpu_cores')} cores and {r.get('exporter_rss_mib_avg')} MiB each, "
              f"VictoriaMetrics RSS {r.get('victoriametrics_rss_mib', '–')} MiB, "
              f"{r.get('victoriametrics_bytes_per_sample', '–')} bytes/sample")
        for d, e in sorted(r.get("dashboards", {}).items()):
            for engine, s in e.items():
                print(f"  {engine:16} {d:22} {s['queries']:3} queries, {s['with_data']:3} with data, "
                      f"total {s['total_s']:.3f} s, median {s['median_s']:.4f} s, max {s['max_s']:.3f} s ({s['slowest']})")
        ev = r.get("rule_evaluation") or {}
        if ev:
            print(f"  rule groups, mean of the last {args.rules_tail:.0%}'s evaluations, each group's share "
                  f"of one interval: {ev['sum_per_interval_s']:.3f} s per {args.scrape_interval} s interval ("
                  + ", ".join(f"{g.rpartition('.')[2]} {v['share_s'] if v.get('share_s') is not None else v['mean_s']}"
                              + (f" (every {v['interval_s']:.0f} s, mean {v['mean_s']})"
                                 if v.get("interval_s") and v["interval_s"] != args.scrape_interval else "")
                              for g, v in sorted(ev["groups"].items(), key=lambda kv: -(kv[1].get("share_s") or kv[1]["mean_s"] or 0))) + ")")
            print(rule_table(ev["rules"], args.top_rules))
        for s in r.get("spot_values", []):
            print(f"  spot {s['query']}: Prometheus {s['prometheus']}, VictoriaMetrics {s['victoriametrics']}")
        for p in r["problems"]:
            print(f"  PROBLEM: {p}")
    if args.check and any(r["problems"] for r in results):
        print("fleet: FAILED", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
