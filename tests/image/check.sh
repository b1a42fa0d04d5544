#!/usr/bin/env bash
# Runs a built gpu-exporter image as a user would and fails if it does not behave
# (docs/container-image.md "What CI checks on the built image"). Called by scripts/image.sh
# --test, which .ci/run uses; it can also be run alone on an image already built:
#
#   bash tests/image/check.sh IMAGE [--write-facts docs/container-image.md]
#
# 1. The image's configuration: numeric non-root USER, the ENTRYPOINT, port 9400, no shell and
#    no package manager in its file system; the binary without debug info or simulator, with
#    packed relative relocations (DT_RELR); with EXPECT_REVISION set, the revision label equals it.
# 2. Without NVML: the exporter stays up, /ready answers 503, /metrics answers, and the log says
#    where libnvidia-ml.so.1 was looked for; SIGTERM ends it with status 0.
# 3. With libnvidia-ml.so.1 injected as the NVIDIA container toolkit does it on a Debian-based
#    image: the library (here the simulated one, target/debug/libnvml_sim.so, whose SONAME is
#    libnvidia-ml.so.1) is put at /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driver version>
#    and the toolkit's update-ldcache step is replayed: the host's ldconfig run on the
#    container's root, which creates the libnvidia-ml.so.1 link and /etc/ld.so.cache. The
#    exporter, given no --nvml-lib, must load it, run as the image's user, become ready and
#    serve every simulated GPU on /metrics.
# 4. Each counters file the image ships loads: the exporter runs with -f on it (dcgm-4.9 and
#    dcgm-4.10 files with --compatibility dcgm-4.9 / dcgm-4.10), becomes ready and serves its
#    metrics.
# 5. The measured facts (size, layers, user, entrypoint, contents) are printed; with
#    --write-facts they replace the block between the image-facts markers of the given file,
#    and without it the facts that do not depend on the toolchain (everything but sizes and
#    times) must equal the ones recorded there.
# The helpers (running the entrypoint, injecting NVML, the facts block) are in
# tests/image/common.sh, shared with tests/image/check-dcgm.sh (the DCGM variant's checks).
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=tests/image/common.sh
. tests/image/common.sh
image=${1:?usage: tests/image/check.sh IMAGE [--write-facts FILE]}
shift
facts_options tests/image/check.sh "$@"
sim_lib=${SIM_LIB:-target/debug/libnvml_sim.so}
# The driver version in the file name the toolkit mounts (any version: the name is what counts).
driver_version=570.172.08

work=$(mktemp -d /tmp/gpu-exporter-image-check.XXXXXX)
ctr=
bpid=
cleanup() {
  [ -n "$bpid" ] && kill -KILL "$bpid" 2>/dev/null || true
  if [ -n "$ctr" ]; then buildah umount "$ctr" >/dev/null 2>&1 || true; buildah rm "$ctr" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

[ -f "$sim_lib" ] || fail "$sim_lib is missing (cargo build -p nvml-sim)"
readelf -d "$sim_lib" | grep -q 'SONAME.*\[libnvidia-ml\.so\.1\]' \
  || fail "$sim_lib has no SONAME libnvidia-ml.so.1 (crates/nvml-sim/build.rs)"

# ---- 1. configuration and file system ----------------------------------------------------
step "configuration of $image"
image_config "$image" "$work/inspect"
# shellcheck disable=SC1091
. "$work/inspect.env"
case "$user" in
  [0-9]*:[0-9]*) ;;
  *) fail "USER is '$user', not numeric uid:gid (Kubernetes' runAsNonRoot cannot verify a name)" ;;
esac
[ "${user%%:*}" != 0 ] || fail "USER is root ($user)"
[ "$entrypoint" = '["/usr/bin/gpu-exporter"]' ] || fail "ENTRYPOINT is $entrypoint"
[ "$ports" = "9400/tcp" ] || fail "exposed ports are '$ports', not 9400/tcp"
# The commit the image says it was built from (scripts/image.sh sets EXPECT_REVISION to the one
# it built): buildah 1.28's layer cache does not count a changed build argument, so a build of
# a new commit could reuse the last build's LABEL step and carry the old commit's revision.
if [ -n "${EXPECT_REVISION:-}" ]; then
  revision=$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.revision"}}' "$image")
  [ "$revision" = "$EXPECT_REVISION" ] \
    || fail "label org.opencontainers.image.revision is '$revision', not the built commit $EXPECT_REVISION"
fi

ctr=$(buildah from --pull=never "$image")
mnt=$(buildah mount "$ctr")
for f in /bin/sh /usr/bin/sh /bin/bash /usr/bin/bash /bin/dash /usr/bin/dash /bin/busybox /usr/bin/busybox; do
  { [ -e "$mnt$f" ] || [ -L "$mnt$f" ]; } && fail "the image has a shell: $f"
done
for f in /usr/bin/dpkg /usr/bin/apt /usr/bin/apt-get /sbin/apk /usr/bin/yum /usr/bin/dnf /usr/bin/microdnf /usr/bin/rpm; do
  { [ -e "$mnt$f" ] || [ -L "$mnt$f" ]; } && fail "the image has a package manager: $f"
done
[ -x "$mnt/usr/bin/gpu-exporter" ] || fail "/usr/bin/gpu-exporter is missing"
if readelf -S "$mnt/usr/bin/gpu-exporter" | grep -q '\.debug_info'; then
  fail "/usr/bin/gpu-exporter carries debug info"
fi
# The Dockerfile links with packed relative relocations (DT_RELR) to keep the loader from
# reading and the process from holding about 0.9 MB of RELA entries (BENCHMARKS.md, issue 27).
readelf -d "$mnt/usr/bin/gpu-exporter" | grep -q '(RELR)' \
  || fail "/usr/bin/gpu-exporter has no packed relative relocations (DT_RELR): was the Dockerfile's RUSTFLAGS lost?"
counters=$(cd "$mnt/etc/dcgm-exporter" && ls ./*.csv | sed 's,^\./,,' | tr '\n' ' ')
[ -n "$counters" ] || fail "no counters files in /etc/dcgm-exporter"
if strings "$mnt/usr/bin/gpu-exporter" | grep -q 'nvmlSimConfigure'; then
  fail "the image's binary carries the simulator (built with the sim feature)"
fi
execs=$(cd "$mnt" && find . -xdev -type f -perm -u+x ! -name '*.so*' | sed 's,^\.,,' | sort | tr '\n' ' ')
files=$(cd "$mnt" && find . -xdev -type f | wc -l)
rootfs_bytes=$(du -sb --apparent-size "$mnt" | awk '{print $1}')
binary_bytes=$(stat -c %s "$mnt/usr/bin/gpu-exporter")

# ---- 2. no NVML ----------------------------------------------------------------------------
step "without libnvidia-ml.so.1: up, not ready, says where it looked"
[ ! -e "$mnt/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1" ] || fail "the image ships libnvidia-ml.so.1"
port=$(free_port); log=$work/no-nvml.log
start "$port" "$log"
wait_code "$port" /metrics 200 30 "$log"
check_user "$port"
sleep 1
[ "$(http_code "$port" /dev/null /ready)" = 503 ] || { cat "$log"; fail "/ready is not 503 without NVML"; }
grep -q 'libnvidia-ml.so.1 through the dynamic loader' "$log" || { cat "$log"; fail "the log does not say where NVML was looked for"; }
no_nvml_line=$(grep -m1 'libnvidia-ml.so.1 through the dynamic loader' "$log" | sed 's/\x1b\[[0-9;]*m//g; s/^[0-9T:.-]*Z *//' | cut -c1-400)
stop "$port" "$log"

# ---- 3. NVML injected as the toolkit does --------------------------------------------------
step "with libnvidia-ml.so.1 injected (toolkit layout + update-ldcache on the container root)"
inject_nvml "$mnt" "$sim_lib" "$driver_version"
port=$(free_port); log=$work/nvml.log
t0=$(date +%s.%N)
start "$port" "$log"
wait_code "$port" /ready 200 30 "$log"
ready_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
check_user "$port"
sleep 1.5
http_code "$port" "$work/metrics.txt" /metrics >/dev/null
gpus=$(grep -o '^DCGM_FI_DEV_GPU_TEMP{[^}]*' "$work/metrics.txt" | grep -o 'UUID="[^"]*"' | sort -u | wc -l)
[ "$gpus" -ge 1 ] || { head -50 "$work/metrics.txt"; fail "/metrics has no DCGM_FI_DEV_GPU_TEMP series"; }
grep -q '^DCGM_FI_DEV_POWER_USAGE{' "$work/metrics.txt" || fail "/metrics has no DCGM_FI_DEV_POWER_USAGE series"
series=$(grep -c '^DCGM_FI_' "$work/metrics.txt")
grep -qi 'nvml-lib\|simulat' "$log" && { cat "$log"; fail "the exporter log mentions a simulator or --nvml-lib"; }
stop "$port" "$log"

# ---- 4. every shipped counters file loads ----------------------------------------------------
counters_checked=()
for f in $counters; do
  step "-f /etc/dcgm-exporter/$f"
  args=(-f "/etc/dcgm-exporter/$f")
  case "$f" in dcgm-4.9-*) args+=(--compatibility dcgm-4.9) ;; dcgm-4.10-*) args+=(--compatibility dcgm-4.10) ;; esac
  port=$(free_port); log=$work/counters-$f.log
  start "$port" "$log" "${args[@]}"
  wait_code "$port" /ready 200 30 "$log"
  sleep 1.5
  http_code "$port" "$work/m.txt" /metrics >/dev/null
  n=$(grep -c '^DCGM_' "$work/m.txt" || true)
  [ "$n" -gt 0 ] || { cat "$log"; fail "-f /etc/dcgm-exporter/$f serves no DCGM_ series"; }
  stop "$port" "$log"
  counters_checked+=("$f ($n series)")
done

# ---- 5. facts --------------------------------------------------------------------------------
step "facts"
compressed=$(compressed_bytes "$image")
history=$(python3 - "$work/inspect.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [h.get("created_by", "").replace("|", "\\|").strip() for h in d["OCIv1"].get("history", []) if not h.get("empty_layer")]
print("; ".join(r[:90] for r in rows))
EOF
)
{
  echo "| Fact | Value |"
  echo "|---|---|"
  echo "| user (stable) | \`$user\` |"
  echo "| process runs as (stable) | $runs_as |"
  echo "| entrypoint (stable) | \`$entrypoint\` |"
  echo "| cmd (stable) | \`$cmd\` |"
  echo "| exposed ports (stable) | \`$ports\` |"
  echo "| layers the Dockerfile adds (stable) | $layers_added |"
  echo "| layers in all (with the base's) | $layers |"
  echo "| shell (stable) | none of /bin/sh, /usr/bin/sh, bash, dash, busybox |"
  echo "| package manager (stable) | none of dpkg, apt, apt-get, apk, yum, dnf, microdnf, rpm |"
  echo "| executables outside shared libraries (stable) | \`$execs\` |"
  echo "| counters files (stable) | ${counters% } |"
  echo "| environment | \`$env\` |"
  echo "| layer history | $history |"
  echo "| files | $files |"
  echo "| unpacked size | $(mib "$rootfs_bytes") |"
  echo "| compressed layers (what a pull downloads) | $(mib "$compressed") |"
  echo "| /usr/bin/gpu-exporter | $(mib "$binary_bytes"), no debug info, no simulator, relative relocations packed (DT_RELR), |"
  echo "| without NVML | /ready 503, /metrics 200; log: \`${no_nvml_line//|/\\|}\` |"
  echo "| with libnvidia-ml.so.1 injected | ready after ${ready_s} s, $gpus GPUs, $series DCGM_FI_* series |"
  echo "| counters files loaded | ${counters_checked[*]} |"
} >"$work/facts.md"
cat "$work/facts.md"

facts_block "$facts_file" "$work/facts.md" \
  '<!-- BEGIN image-facts: written by tests/image/check.sh --write-facts -->' '<!-- END image-facts -->' \
  "$image" "bash scripts/image.sh --local-bases --test --write-facts" "$write"
step "passed"
