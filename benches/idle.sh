#!/usr/bin/env bash
# Idle CPU and memory of the exporter next to a Python NVML exporter (nvitop-exporter, from
# PyPI) on the same simulated node, as BENCHMARKS.md reports them. Both sample every second
# (`-c 1000`, `--interval 1`) and are scraped every 15 s, as Prometheus would; after a warm-up
# the script reads each process's CPU time (utime + stime, /proc/PID/stat) over DURATION
# seconds, its VmRSS at every scrape and at the end, and prints one table row per exporter
# (VmRSS at the end and the median of the samples: one reading can fall just before or after
# a page fault or a freed buffer) and the ratios.
#
# usage (from the repository root, after cargo build --release --workspace):
#   bash benches/idle.sh target/release/gpu-exporter [DURATION] [SCENARIO]
# nvitop-exporter is installed into a virtual environment under /tmp on first use (pip). It
# loads `libnvidia-ml.so.1` through the dynamic loader: the script points it at the simulated
# library (target/release/libnvml_sim.so) through a directory holding that name, with the
# same NVML_SIM_SCENARIO, so both read the same simulated GPUs. Functions the simulator lacks
# (fan speed, for example) make nvitop log errors and skip those values; its CPU figure is
# therefore, if anything, lower than on a real node.
# PROD_BIN=PATH adds a row for the production build (cargo build --release
# --no-default-features), which has no --simulate and is pointed at the simulated library as
# nvitop-exporter is; it has no simulated pods either, so no pod series. Several paths,
# separated by spaces, add a row each, all run side by side (a build before and after a
# change, measured in the same minutes).
# OLD_SIM=PATH adds a row: the exporter against another build of the simulated library
# (e.g. one whose event wait polled), to show what the simulator itself costs.
# LOAD=N then scrapes every exporter N times more (one after the other, half of them with gzip,
# as Prometheus asks), and prints a second table: each process's VmRSS and VmHWM after the
# load, i.e. the memory it settles at once it has served, beside the idle figures.
set -euo pipefail
bin=$1
duration=${2:-120}
scenario=${3:-h100-mig}
port=19471
lib=$(dirname "$bin")/libnvml_sim.so
venv=${NVITOP_VENV:-/tmp/nvitop-venv}
[ -x "$venv/bin/nvitop-exporter" ] || {
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q nvitop-exporter
}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
ln -s "$(realpath "$lib")" "$work/libnvidia-ml.so.1"

pids=() names=() ports=()
start() { # name port command...
  local name=$1 p=$2; shift 2
  "$@" >"$work/${#pids[@]}.log" 2>&1 &
  pids+=($!) names+=("$name") ports+=("$p")
}
start gpu-exporter $port "$bin" --simulate "$scenario" -c 1000 -a 127.0.0.1:$port
start nvitop-exporter $((port + 1)) env LD_LIBRARY_PATH="$work" NVML_SIM_SCENARIO="$scenario" \
  "$venv/bin/nvitop-exporter" --bind-address 127.0.0.1 --port $((port + 1)) --interval 1
prod_port=$((port + 3))
for prod in ${PROD_BIN:-}; do
  # The production build (no `sim` feature, what the image carries) has no --simulate: it
  # loads the simulated library through the dynamic loader, exactly as nvitop-exporter does.
  name=gpu-exporter-production
  [ "$prod" = "$PROD_BIN" ] || name="gpu-exporter-production ($prod)" # several: say which
  start "$name" $prod_port env LD_LIBRARY_PATH="$work" NVML_SIM_SCENARIO="$scenario" \
    "$prod" -c 1000 -a 127.0.0.1:$prod_port
  prod_port=$((prod_port + 10))
done
if [ -n "${OLD_SIM:-}" ]; then
  start gpu-exporter-old-sim $((port + 2)) "$bin" --simulate "$scenario" --nvml-lib "$OLD_SIM" \
    -c 1000 -a 127.0.0.1:$((port + 2))
fi

for p in "${ports[@]}"; do
  for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$p/metrics" && break; sleep 0.2; done
done
sleep 10 # warm-up: first samples, imports, caches
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# nvitop-exporter runs under `env`, which execs: the PID is the Python process.
rss() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
declare -A c0 samples
for i in "${!pids[@]}"; do c0[$i]=$(cpu "${pids[$i]}"); done
t0=$(date +%s.%N)
end=$(($(date +%s) + duration))
while [ "$(date +%s)" -lt "$end" ]; do
  for p in "${ports[@]}"; do curl -s -o /dev/null "http://127.0.0.1:$p/metrics"; done
  sleep 15
  for i in "${!pids[@]}"; do samples[$i]+="$(rss "${pids[$i]}") "; done
done
t1=$(date +%s.%N)
tck=$(getconf CLK_TCK)
printf '| Exporter | CPU seconds | %% of one core | VmRSS (KiB) | VmRSS median (KiB) | series |\n|---|---|---|---|---|---|\n'
for i in "${!pids[@]}"; do
  c1=$(cpu "${pids[$i]}")
  rss=$(rss "${pids[$i]}")
  med=$(echo ${samples[$i]} | tr ' ' '\n' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
  series=$(curl -s "http://127.0.0.1:${ports[$i]}/metrics" | grep -vc '^#')
  awk -v n="${names[$i]}" -v c=$((c1 - c0[$i])) -v k="$tck" -v a="$t0" -v b="$t1" -v r="$rss" -v m="$med" -v s="$series" \
    'BEGIN { w = b - a; printf "| %s | %.2f in %.0f s | %.3f | %d | %d | %d |\n", n, c / k, w, 100 * c / k / w, r, m, s }' |
    tee -a "$work/rows"
done
awk -F'|' '{ split($3, t, " "); cpu[NR] = t[1]; rss[NR] = $5; med[NR] = $6; name[NR] = $2 }
  $2 ~ /nvitop/ { n = NR }
  END { for (i = 1; i <= NR; i++) if (i != n && cpu[i] > 0)
    printf "nvitop-exporter /%s: CPU %.1f×, RSS %.1f× (at the end), %.1f× (medians)\n", name[i], cpu[n] / cpu[i], rss[n] / rss[i], med[n] / med[i] }' "$work/rows"
if [ "${LOAD:-0}" -gt 0 ]; then
  for p in "${ports[@]}"; do
    for _ in $(seq 1 $((LOAD / 2))); do
      curl -s -o /dev/null "http://127.0.0.1:$p/metrics"
      curl -s -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$p/metrics"
    done
  done
  sleep 2
  printf '\nAfter %d scrapes each:\n\n| Exporter | VmRSS (KiB) | VmHWM (KiB) |\n|---|---|---|\n' "$LOAD"
  for i in "${!pids[@]}"; do
    awk -v n="${names[$i]}" '/VmRSS/ { r = $2 } /VmHWM/ { h = $2 } END { printf "| %s | %d | %d |\n", n, r, h }' \
      "/proc/${pids[$i]}/status"
  done
fi
