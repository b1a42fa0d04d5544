#!/usr/bin/env bash
# Link order of the production binary: the functions the exporter runs, laid out together at
# the start of its .text, so that the pages it keeps resident are the pages it uses.
#
# Why: the kernel maps a binary's code in 64 kB windows around each page it faults in
# ("fault-around"). With the linker's default layout the ~1.3 MB of code the exporter runs
# is spread over its 13 MB of .text, and those windows kept about 6 MB of it resident; laid
# out together it is about 1.5 MB (BENCHMARKS.md, issue 27).
#
#   bash scripts/link-order.sh resolve BINARY OUT
#       Writes OUT, a symbol ordering file for lld (--symbol-ordering-file): BINARY's own
#       symbols for the functions in scripts/link-order.txt, in that file's order. BINARY is a
#       first link of the same sources (symbols kept). The profile names functions without
#       their hashes (see normalise below), so it matches any build of the same code; a
#       function that is renamed or gone is simply not placed. Fails when fewer than MIN_MATCH
#       percent (default 80) of the profiled functions are found: the profile is then too old
#       to help, and `profile` below refreshes it.
#   bash scripts/link-order.sh profile BINARY [SCENARIO]
#       Rewrites scripts/link-order.txt by running BINARY (a production build: cargo build
#       --release --no-default-features) under valgrind's callgrind on a simulated node
#       (target/release/libnvml_sim.so through the dynamic loader, default h100-mig, -c 1000):
#       the functions that run after start-up (sampling ticks, /metrics scrapes plain and
#       gzip, /health) come first, hottest first, then those that ran only while starting.
#       Needs valgrind, curl, python3 and the simulated library (cargo build --release -p
#       nvml-sim; NVML_SIM_LIB names another build of it). STEADY sets the seconds of steady
#       state (default 240: the h100-mig scenario loses a field at about 90 s and a GPU from
#       about 120 s to 180 s, and the code those paths run belongs with the rest; a profile
#       of 60 s left it spread over the binary, about 1 MB more of it resident), and
#       LINK_ORDER_PROFILE another file to write. scripts/test.sh runs it
#       briefly on the debug production build, so that the profiler itself is tested. Pod
#       attribution (the kubelet and API clients) is not in the profile: the production build
#       has no simulated cluster to run them against; their code keeps the linker's order.
#
# The Dockerfile's builder stage runs `resolve` on a first link and links again with the
# result; lld (Rust's default linker on x86_64 Linux from 1.90) reads the file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
profile_file=${LINK_ORDER_PROFILE:-$here/link-order.txt}

# A symbol without what changes from build to build: the legacy mangling's trailing hash
# (17h<16 hex digits>E), v0's crate disambiguators (Cs<base62>_) and the back-references that
# point past them (B<base62>_), and LLVM's .llvm.<n> suffix on promoted local symbols. Two
# instances of one generic function can become one name: both are then placed.
normalise_awk='
function normalise(s) {
  sub(/\.llvm\.[0-9]+$/, "", s)
  if (s ~ /^_ZN/) sub(/17h[0-9a-f]+E$/, "E", s)
  else if (s ~ /^_R/) { gsub(/Cs[0-9A-Za-z]+_/, "Cs_", s); gsub(/B[0-9A-Za-z]*_/, "B_", s) }
  return s
}'

# The exporter's own functions must carry v0 names (`-C symbol-mangling-version=v0`, which
# .cargo/config.toml and the Dockerfile set): legacy names give every instance of a generic
# function one name and one hash, so without the hash thousands of them would look alike.
# $1 is the binary, $2 its `nm --defined-only` listing.
require_v0() {
  if awk '$3 ~ /^_ZN12gpu_exporter/ { found = 1 } END { exit !found }' "$2"; then
    echo "link-order: $1 has legacy-mangled gpu_exporter symbols: build it with RUSTFLAGS='-C symbol-mangling-version=v0' (.cargo/config.toml sets it; a RUSTFLAGS variable replaces that)" >&2
    return 1
  fi
}

resolve() {
  local bin=$1 out=$2 min=${MIN_MATCH:-80}
  [ -f "$bin" ] || { echo "link-order: $bin: no such file" >&2; exit 1; }
  [ -f "$profile_file" ] || { echo "link-order: $profile_file: no such file" >&2; exit 1; }
  command -v nm >/dev/null || { echo "link-order: nm (binutils) is needed" >&2; exit 1; }
  local syms
  syms=$(mktemp)
  nm --defined-only "$bin" >"$syms" 2>/dev/null || true
  [ -s "$syms" ] || { echo "link-order: $bin has no symbols (stripped?)" >&2; rm -f "$syms"; exit 1; }
  require_v0 "$bin" "$syms" || { rm -f "$syms"; exit 1; }
  # Pass 1 reads the profile (rank of each normalised name); pass 2 the binary's symbols.
  awk -v min="$min" -v bin="$bin" -v prof="$profile_file" "$normalise_awk"'
    FNR == NR {
      if ($0 ~ /^#/ || $0 == "") next
      p = normalise($0)
      if (!(p in rank)) { rank[p] = ++profiled }
      next
    }
    NF == 3 {
      n = normalise($3)
      if (n in rank) {
        if (!(n in found)) { found[n] = 1; matched++ }
        print rank[n], $3
      }
    }
    END {
      pct = profiled ? 100 * matched / profiled : 0
      printf "link-order: %d of %d profiled functions found in %s (%.0f%%)\n", matched, profiled, bin, pct > "/dev/stderr"
      if (pct < min) {
        printf "link-order: fewer than %d%% found: %s is out of date; refresh it with `bash scripts/link-order.sh profile BINARY`\n", min, prof > "/dev/stderr"
        exit 1
      }
    }' "$profile_file" "$syms" | sort -n -s -k1,1 | cut -d' ' -f2 >"$out"
  local rc=${PIPESTATUS[0]}
  rm -f "$syms"
  [ "$rc" -eq 0 ] || exit "$rc"
  echo "link-order: $(wc -l <"$out") symbols in $out" >&2
}

profile() {
  local bin=$1 scenario=${2:-h100-mig}
  local lib
  lib=${NVML_SIM_LIB:-$(cd "$here/.." && pwd)/target/release/libnvml_sim.so}
  for tool in valgrind callgrind_control curl python3; do
    command -v "$tool" >/dev/null || { echo "link-order: $tool is needed" >&2; exit 1; }
  done
  [ -f "$lib" ] || { echo "link-order: $lib missing: cargo build --release -p nvml-sim (or set NVML_SIM_LIB)" >&2; exit 1; }
  lib=$(realpath "$lib")
  local work port=19481
  work=$(mktemp -d)
  nm --defined-only "$bin" >"$work/syms" 2>/dev/null || true
  require_v0 "$bin" "$work/syms" || { rm -rf "$work"; exit 1; }
  ln -s "$lib" "$work/libnvidia-ml.so.1"
  LD_LIBRARY_PATH=$work NVML_SIM_SCENARIO=$scenario valgrind --tool=callgrind --demangle=no \
    --callgrind-out-file="$work/cg.out" "$bin" -c 1000 -a 127.0.0.1:$port >"$work/log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break; sleep 0.2; done
  curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" \
    || { cat "$work/log" >&2; kill "$pid" 2>/dev/null; rm -rf "$work"; exit 1; }
  sleep 10 # the first ticks: what runs once after the first sample is start-up too
  # Start-up ends when the daemon gives its start-up pages back (daemon::trim), a few ticks
  # after the first sample: that code runs once and belongs to start-up too.
  for _ in $(seq 1 120); do grep -q 'start-up over' "$work/log" && break; sleep 0.5; done
  callgrind_control -d "$pid" >/dev/null 2>&1 # dump 1: start-up
  local end=$(($(date +%s) + ${STEADY:-240}))
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
    curl -s -o /dev/null -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics"
    curl -s -o /dev/null "http://127.0.0.1:$port/health"
    sleep 2
  done
  callgrind_control -d "$pid" >/dev/null 2>&1 # dump 2: steady state
  kill -TERM "$pid"
  wait "$pid" || true
  python3 - "$work/cg.out.1" "$work/cg.out.2" "$(basename "$bin")" "$work/functions" <<'PY'
import re, sys
start_file, steady_file, obj, out = sys.argv[1:5]

def self_cost(path):
    """Self cost (instructions) per function of the object `obj` in one callgrind dump."""
    names, objs, cost = {}, {}, {}
    ob = fn = None
    skip = False
    def name(table, v):
        m = re.match(r"\((\d+)\)(?: (.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1))
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("ob="):
            ob = name(objs, line[3:])
        elif line.startswith("fn="):
            fn = name(names, line[3:])
        elif line.startswith("cob="):
            name(objs, line[4:])
        elif line.startswith("cfn="):
            name(names, line[4:])
        elif line.startswith("calls="):
            skip = True  # the next cost line is the call's inclusive cost
        elif line[:1].isdigit() or line[:1] in "+-*":
            if skip:
                skip = False
                continue
            if ob and ob.endswith("/" + obj) and fn:
                parts = line.split()
                cost[fn] = cost.get(fn, 0) + (int(parts[1]) if len(parts) > 1 else 0)
    return cost

start, steady = self_cost(start_file), self_cost(steady_file)
with open(out + ".steady", "w") as f:
    f.writelines(n + "\n" for n in sorted(steady, key=lambda n: (-steady[n], n)))
with open(out + ".start", "w") as f:
    f.writelines(n + "\n" for n in sorted(set(start) - set(steady)))
PY
  # Normalised as `resolve` reads them; instances that share a name are written once.
  {
    echo "# Link order of the production binary: written by \`bash scripts/link-order.sh profile\`,"
    echo "# read by \`resolve\` (see the script). Simulated node $scenario, -c 1000: the functions"
    echo "# that run after start-up, hottest first, then those that run only while starting."
    awk "$normalise_awk"'{ n = normalise($0); if (!(n in seen)) { seen[n] = 1; print n } }' \
      "$work/functions.steady" "$work/functions.start"
  } >"$profile_file"
  echo "link-order: $(grep -vc '^#' "$profile_file") functions in $profile_file" >&2
  rm -rf "$work"
}

case ${1:-} in
  resolve) [ $# -eq 3 ] || { echo "usage: $0 resolve BINARY OUT" >&2; exit 2; }; resolve "$2" "$3" ;;
  profile) [ $# -ge 2 ] || { echo "usage: $0 profile BINARY [SCENARIO]" >&2; exit 2; }; profile "$2" "${3:-h100-mig}" ;;
  *) echo "usage: $0 resolve BINARY OUT | profile BINARY [SCENARIO]" >&2; exit 2 ;;
esac
