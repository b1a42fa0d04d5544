#!/usr/bin/env bash
# Resident memory of a release binary on a simulated node, as BENCHMARKS.md reports it: start
# it, wait 3 s, scrape /metrics 2,000 times, print VmRSS/VmHWM. By default the h100-mig node
# with pod attribution and the recommended counters; SCENARIO, COUNTERS and EXTRA (more flags,
# split on spaces) change that, e.g. the DCGM client's cost:
#   SCENARIO=benches/fixtures/a100-8x7.toml COUNTERS=counters/dcp-metrics-included.csv \
#     EXTRA="--dcgm-mode embedded" bash benches/rss.sh target/release/gpu-exporter
# usage (from the repository root, after cargo build --release --workspace):
#   bash benches/rss.sh target/release/gpu-exporter [PORT]
# The simulated libraries must sit beside the binary (target/release/libnvml_sim.so, and
# libdcgm_sim.so for DCGM).
set -u
bin=$1; port=${2:-19401}
scenario=${SCENARIO:-h100-mig}; counters=${COUNTERS:-counters/recommended.csv}
# shellcheck disable=SC2206 # EXTRA is a list of flags, split on purpose
extra=(${EXTRA:--k})
$bin --simulate "$scenario" "${extra[@]}" -f "$counters" -c 1000 -a 127.0.0.1:$port >/tmp/rss-$port.log 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/ready >/dev/null && break; sleep 0.1; done
sleep 3
grep -E 'VmRSS' /proc/$pid/status | sed 's/^/after start: /'
for i in $(seq 1 2000); do curl -s -o /dev/null http://127.0.0.1:$port/metrics; done
curl -s http://127.0.0.1:$port/metrics | wc -c | sed 's/^/page bytes: /'
grep -E 'VmRSS|VmHWM' /proc/$pid/status
kill -TERM $pid; wait $pid 2>/dev/null
