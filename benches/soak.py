#!/usr/bin/env python3
"""Soak: runs the exporter on a simulated node for a fixed time under a steady, high request
rate, with counters-file reloads, and samples its resident memory, descriptors and threads, to
tell allocator warm-up from a leak. Loopback only; stops by itself (the exporter too).

What one run does:
  * starts BIN --simulate SCENARIO -c INTERVAL_MS -f <temporary counters file> on a free
    127.0.0.1 port (the simulated library must sit beside BIN, as `cargo build --workspace`
    leaves it);
  * CLIENTS threads send, at RATE requests per second in all, GET /metrics (plain and gzip
    alternately), and every 10th request /status, / or /health; each thread opens a new
    connection every 50 requests;
  * every RELOAD_S seconds the counters file is rewritten (two sets in turn, written in place
    so the exporter sees a change) and, every other time, SIGHUP is sent as well. A check that
    falls between the truncation and the write reads an empty file, which is refused (a
    failed reload, the set in use kept): the failure path is soaked too;
  * every SAMPLE_S seconds it prints VmRSS, VmHWM, RssAnon (heap, stacks: what a leak would
    grow), RssFile (the pages of the binary and the simulated library mapped in as code paths
    run: bounded by their size), open descriptors and threads;
  * at the end it sends SIGTERM and prints a summary: RSS at several points, the RSS slope
    over the first and the second half (KiB per hour of soak), and the range of descriptors
    and threads.

usage (from the repository root):
  python3 benches/soak.py [--bin target/debug/gpu-exporter] [--scenario h100-mig]
      [--duration 1800] [--interval-ms 100] [--rate 200] [--clients 4] [--reload-s 10]
      [--sample-s 30]
"""

import argparse
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MAX_DURATION_S = 4 * 3600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "Threads"):
                out[key] = int(rest.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def counters_sets(repo):
    """Two counter sets to alternate: the default file, and the same without its last
    metric rows."""
    with open(os.path.join(repo, "counters", "default-counters.csv")) as f:
        full = f.read()
    rows = full.splitlines()
    metric_rows = [i for i, l in enumerate(rows)
                   if l.startswith("DCGM_FI_") and l.split(",")[1].strip() in ("gauge", "counter")]
    drop = set(metric_rows[-3:])
    short = "\n".join(l for i, l in enumerate(rows) if i not in drop) + "\n"
    return full, short


class Load:
    """CLIENTS threads sharing a request budget of RATE per second."""

    def __init__(self, port, rate, clients, stop):
        self.port, self.rate, self.clients, self.stop = port, rate, clients, stop
        self.lock = threading.Lock()
        self.requests = 0
        self.errors = 0
        self.bytes = 0
        self.last_error = ""

    def run(self, idx):
        period = self.clients / self.rate
        next_at = time.monotonic() + idx * period / self.clients
        conn = None
        n = 0
        while not self.stop.is_set():
            now = time.monotonic()
            if now < next_at:
                self.stop.wait(next_at - now)
                continue
            next_at += period
            if next_at < now - 1:  # fell behind: do not burst
                next_at = now + period
            if conn is None or n % 50 == 0:
                if conn is not None:
                    conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            n += 1
            if n % 10 == 0:
                path, headers = ("/status", "/", "/health")[(n // 10) % 3], {}
            else:
                path = "/metrics"
                headers = {"Accept-Encoding": "gzip"} if n % 2 else {}
            try:
                conn.request("GET", path, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException) as e:
                ok, body = False, b""
                self.last_error = repr(e)
                conn.close()
                conn = None
            with self.lock:
                self.requests += 1
                self.bytes += len(body)
                if not ok:
                    self.errors += 1
        if conn is not None:
            conn.close()


def slope_kib_per_hour(points):
    """Least-squares slope of (seconds, KiB) points, in KiB per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return 0.0
    sxy = sum((t - mx) * (v - my) for t, v in points)
    return sxy / sxx * 3600


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(repo, "target", "debug", "gpu-exporter"))
    ap.add_argument("--scenario", default="h100-mig")
    ap.add_argument("--duration", type=float, default=1800)
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--reload-s", type=float, default=10)
    ap.add_argument("--sample-s", type=float, default=30)
    a = ap.parse_args()
    duration = min(a.duration, MAX_DURATION_S)
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="gpu-exporter-soak-")
    counters = os.path.join(tmp, "counters.csv")
    full, short = counters_sets(repo)
    with open(counters, "w") as f:
        f.write(full)
    log_path = os.path.join(tmp, "exporter.log")
    log = open(log_path, "w")
    cmd = [a.bin, "--simulate", a.scenario, "-c", str(a.interval_ms), "-f", counters,
           "-a", f"127.0.0.1:{port}"]
    child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    stop = threading.Event()
    threads = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/ready")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if child.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the exporter did not become ready; log: {log_path}")
            time.sleep(0.2)
        print(f"soak: {' '.join(cmd)}")
        print(f"soak: {duration:.0f} s, {a.rate:g} requests/s over {a.clients} clients, "
              f"reload every {a.reload_s:g} s (SIGHUP every other time), sample every {a.sample_s:g} s")
        load = Load(port, a.rate, a.clients, stop)
        threads = [threading.Thread(target=load.run, args=(i,), daemon=True) for i in range(a.clients)]
        for t in threads:
            t.start()
        start = time.monotonic()
        samples = []
        reloads = 0
        next_reload = start + a.reload_s
        next_sample = start
        print(f"{'t_s':>6} {'rss_kib':>8} {'hwm_kib':>8} {'anon_kib':>8} {'file_kib':>8} {'fds':>4} "
              f"{'threads':>7} {'requests':>9} {'errors':>6} {'reloads':>7}")
        while True:
            now = time.monotonic()
            if child.poll() is not None:
                sys.exit(f"the exporter exited ({child.returncode}); log: {log_path}")
            if now >= next_reload:
                reloads += 1
                with open(counters, "w") as f:
                    f.write(short if reloads % 2 else full)
                if reloads % 2 == 0:
                    child.send_signal(signal.SIGHUP)
                next_reload += a.reload_s
            if now >= next_sample:
                st = proc_status(child.pid)
                t = now - start
                samples.append((t, st))
                print(f"{t:6.0f} {st['VmRSS']:8d} {st['VmHWM']:8d} {st['RssAnon']:8d} {st['RssFile']:8d} "
                      f"{st['fds']:4d} {st['Threads']:7d} {load.requests:9d} {load.errors:6d} {reloads:7d}",
                      flush=True)
                next_sample += a.sample_s
            if now - start >= duration:
                break
            time.sleep(max(0.0, min(next_reload, next_sample, start + duration) - now))
        stop.set()
        for t in threads:
            t.join(timeout=15)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics")
        applied = [l.split('result="', 1)[1].replace('"} ', " ")
                   for l in c.getresponse().read().decode().splitlines()
                   if l.startswith("gpu_exporter_counters_reloads_total{")]
        end = proc_status(child.pid)
        samples.append((time.monotonic() - start, end))
        rss = [(t, s["VmRSS"]) for t, s in samples]
        anon = [(t, s["RssAnon"]) for t, s in samples]
        half = duration / 2
        first = [p for p in rss if p[0] <= half]
        second = [p for p in rss if p[0] >= half]
        at = lambda frac: min(rss, key=lambda p: abs(p[0] - frac * duration))[1]
        print("summary:")
        print(f"  requests {load.requests} ({load.requests / duration:.0f}/s), errors {load.errors}"
              + (f" (last: {load.last_error})" if load.errors else "")
              + f", {load.bytes / 2**20:.0f} MiB read, reloads {reloads} "
              + f"(gpu_exporter_counters_reloads_total: {', '.join(applied) or 'absent'})")
        print(f"  RSS KiB: start {rss[0][1]}, 10% {at(0.1)}, 25% {at(0.25)}, 50% {at(0.5)}, "
              f"75% {at(0.75)}, end {rss[-1][1]}; peak (VmHWM) {end['VmHWM']}")
        print(f"  RSS slope: first half {slope_kib_per_hour(first):+.0f} KiB/h, "
              f"second half {slope_kib_per_hour(second):+.0f} KiB/h")
        anon_first = [p for p in anon if p[0] <= half]
        anon_second = [p for p in anon if p[0] >= half]
        print(f"  RssAnon KiB: start {anon[0][1]}, 50% {min(anon, key=lambda p: abs(p[0] - half))[1]}, "
              f"end {anon[-1][1]}; slope first half {slope_kib_per_hour(anon_first):+.0f} KiB/h, "
              f"second half {slope_kib_per_hour(anon_second):+.0f} KiB/h; RssFile KiB: start "
              f"{samples[0][1]['RssFile']}, end {samples[-1][1]['RssFile']}")
        fds = [s["fds"] for _, s in samples]
        thr = [s["Threads"] for _, s in samples]
        print(f"  descriptors {min(fds)}..{max(fds)} (end {fds[-1]}), threads {min(thr)}..{max(thr)} (end {thr[-1]})")
    finally:
        stop.set()
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        log.close()
        if os.environ.get("SOAK_KEEP_LOG"):
            print(f"  exporter exit status {child.returncode}; log kept: {log_path}")
        else:
            with open(log_path) as f:
                lines = f.read().splitlines()
            warnings = [l for l in lines if " WARN " in l or " ERROR " in l]
            print(f"  exporter exit status {child.returncode}; {len(lines)} log lines, "
                  f"{len(warnings)} warnings or errors (SOAK_KEEP_LOG=1 keeps the log)")
            for l in warnings[:5]:
                print(f"    {l}")
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
