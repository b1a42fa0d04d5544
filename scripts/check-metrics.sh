#!/usr/bin/env bash
# Runs the exporter on each built-in simulated scenario, scrapes /metrics and feeds it to
# `promtool check metrics`. A parse error fails. Lint findings are allowed only where they
# follow from dcgm-exporter-compatible names (listed below); any other finding fails.
set -euo pipefail
bin=${1:-target/debug/gpu-exporter}
cd "$(dirname "$0")/.."

# Findings implied by the compatibility contract (docs/compatibility.md "Label contract"), each with its reason:
allowed=(
  # dcgm-exporter's label names: UUID, modelName, GPU_I_PROFILE, GPU_I_ID, Hostname, DCGM_FI_* label fields
  "label names should be written in 'snake_case' not 'camelCase'"
  # dcgm-exporter's counter names carry no _total suffix (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, …)
  'counter metrics should have "_total" suffix'
  # dcgm-exporter's name DCGM_FI_DEV_PCIE_REPLAY_COUNTER contains the word COUNTER
  "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'"
)
grep_args=()
for a in "${allowed[@]}"; do grep_args+=(-e "$a"); done

fail=0
for scenario in h100-mig a100-l4; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  log=$(mktemp)
  "$bin" --simulate "$scenario" -c 500 -a "127.0.0.1:$port" >"$log" 2>&1 &
  pid=$!
  ok=
  for _ in $(seq 1 200); do
    if curl -fsS "http://127.0.0.1:$port/ready" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  if [ -z "$ok" ]; then echo "exporter ($scenario) never became ready:"; cat "$log"; kill "$pid" || true; exit 1; fi
  sleep 1.2   # let a second tick land so GPM/rate fields are present
  out=$(mktemp)
  curl -fsS "http://127.0.0.1:$port/metrics" >"$out"
  kill -TERM "$pid"; wait "$pid" || { echo "exporter ($scenario) did not exit cleanly"; cat "$log"; exit 1; }
  set +e
  findings=$(promtool check metrics <"$out" 2>&1)
  rc=$?
  set -e
  if [ $rc -eq 1 ]; then echo "promtool ($scenario): parse error"; echo "$findings"; fail=1; continue; fi
  unexpected=$(printf '%s\n' "$findings" | grep -v '^$' | grep -vF "${grep_args[@]}" || true)
  if [ -n "$unexpected" ]; then
    echo "promtool ($scenario): unexpected findings:"; echo "$unexpected"; fail=1
  else
    echo "promtool ($scenario): $(wc -l <"$out") lines, parse OK, only the allowed dcgm-compatibility findings ($(printf '%s\n' "$findings" | grep -c . || true))"
  fi
  rm -f "$out" "$log"
done
exit $fail
