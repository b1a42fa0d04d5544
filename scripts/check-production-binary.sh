#!/usr/bin/env bash
# Checks which build of the exporter a binary is, from its symbols and strings:
#   check-production-binary.sh BINARY production   fails if it carries simulator code
#   check-production-binary.sh BINARY default      fails if it does not (so the check can fail)
# Simulator code: the `sim` module's simulator parts (simulated-library controls `sim::library`
# and `sim::dcgm`, simulated cluster `sim::cluster`, fake kubelet `sim::kubelet` with the generated pod-resources
# gRPC *server*, fake Kubernetes API server `sim::api`). The production build compiles only the
# simulator's stand-in (`sim::node` from src/sim/absent.rs, which refuses --simulate and has no
# simulator code), so that one is not looked for; the refusal itself is checked below.
set -euo pipefail
bin=$1 want=$2
command -v nm >/dev/null || { echo "nm (binutils) is needed" >&2; exit 1; }
pattern='gpu_exporter::sim::(api|cluster|dcgm|kubelet|library)::|FakeKubelet|FakeApi|pod_resources_lister_server|SimCluster|SimLib|SimDcgm'
syms=$(mktemp); trap 'rm -f "$syms"' EXIT
nm -C "$bin" >"$syms" 2>/dev/null || true
found=$(grep -cE "$pattern" "$syms" || true)
size=$(stat -c %s "$bin")
case $want in
  production)
    if [ "$found" -ne 0 ]; then
      echo "FAIL: $bin has $found simulator symbols, e.g.:" >&2
      grep -E "$pattern" "$syms" | head -5 >&2
      exit 1
    fi
    if ! grep -q 'gpu_exporter::' "$syms"; then
      echo "FAIL: $bin has no gpu_exporter symbols at all (stripped?): the check would prove nothing" >&2
      exit 1
    fi
    if "$bin" --simulate >/dev/null 2>&1; then
      echo "FAIL: $bin accepted --simulate" >&2; exit 1
    fi
    echo "production build: no simulator symbols; --simulate refused; $size bytes" ;;
  default)
    if [ "$found" -eq 0 ]; then
      echo "FAIL: $bin (default features) has no simulator symbols: the production check cannot tell" >&2
      exit 1
    fi
    echo "default build: $found simulator symbols; $size bytes" ;;
  *) echo "usage: $0 BINARY production|default" >&2; exit 2 ;;
esac
