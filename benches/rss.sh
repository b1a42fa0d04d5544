#!/usr/bin/env bash
# Resident memory of a release binary on the simulated h100-mig node with pod attribution, as
# BENCHMARKS.md reports it: start it, wait 3 s, scrape /metrics 2,000 times, print VmRSS/VmHWM.
# usage (from the repository root, after cargo build --release --workspace):
#   bash benches/rss.sh target/release/gpu-exporter [PORT]
# The simulated library must sit beside the binary (target/release/libnvml_sim.so).
set -u
bin=$1; port=${2:-19401}
$bin --simulate h100-mig -k -f counters/recommended.csv -c 1000 -a 127.0.0.1:$port >/tmp/rss-$port.log 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/ready >/dev/null && break; sleep 0.1; done
sleep 3
grep -E 'VmRSS' /proc/$pid/status | sed 's/^/after start: /'
for i in $(seq 1 2000); do curl -s -o /dev/null http://127.0.0.1:$port/metrics; done
curl -s http://127.0.0.1:$port/metrics | wc -c | sed 's/^/page bytes: /'
grep -E 'VmRSS|VmHWM' /proc/$pid/status
kill -TERM $pid; wait $pid 2>/dev/null
