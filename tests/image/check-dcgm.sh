#!/usr/bin/env bash
# Runs the DCGM variant of the gpu-exporter image (the Dockerfile's `dcgm` target) as a user
# would and fails if it does not behave (docs/container-image.md "The DCGM variant"). Called
# by scripts/image.sh --dcgm --test after tests/image/check.sh passed on the default image; it
# can also be run alone on images already built:
#
#   bash tests/image/check-dcgm.sh VARIANT DEFAULT [--write-facts docs/container-image.md]
#
# 1. The variant is the default image plus one file: the same configuration (user,
#    entrypoint, ports, environment, labels), one more COPY layer, and the same files with the
#    same contents, modes and owners except /usr/lib/x86_64-linux-gnu/libdcgm.so.4, a regular
#    file with the SONAME libdcgm.so.4. The default image carries no libdcgm at all.
# 2. Remote mode, as on a node with a standalone nv-hostengine: the stand-in host engine
#    (target/debug/dcgm-sim-hostengine) runs on this machine on a unix socket in a folder that
#    is bind-mounted into the container (as the GPU Operator's hostPath would be); the
#    simulated NVML is injected as tests/image/check.sh injects it. Both simulate SCENARIO
#    (a100-mig-t4: an A100 in MIG mode and a T4). The variant's entrypoint runs as the image's
#    user with DCGM_REMOTE_HOSTENGINE_INFO=unix://<socket> (what the GPU Operator sets) and
#    -f /etc/dcgm-exporter/dcp-metrics-included.csv: /ready answers 200, /metrics has
#    `gpu_exporter_dcgm_up 1` and DCGM_FI_PROF_GR_ENGINE_ACTIVE for the A100's MIG instances
#    (a GPU in MIG mode is exported per instance) and the T4, and the log says "DCGM
#    answers". SIGTERM ends it with status 0.
# 3. Without a hostengine address (and no --dcgm-mode) the variant serves what the default
#    image serves: DCGM stays off (no gpu_exporter_dcgm_up, no DCGM in the log), and the set of
#    series (names and labels, not values) equals the default image's on the same node.
# 4. The facts (the variant's sizes next to the default image's, the file it adds, what remote
#    mode served) are printed; with --write-facts they replace the block between the
#    image-facts-dcgm markers of the given file, and without it the rows marked "(stable)" must
#    equal the recorded ones.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=tests/image/common.sh
. tests/image/common.sh
usage="usage: tests/image/check-dcgm.sh VARIANT DEFAULT [--write-facts FILE]"
variant=${1:?$usage}
default=${2:?$usage}
shift 2
facts_options tests/image/check-dcgm.sh "$@"
nvml_lib=${SIM_LIB:-target/debug/libnvml_sim.so}
dcgm_lib=${DCGM_SIM_LIB:-target/debug/libdcgm_sim.so}
hostengine=${DCGM_SIM_HOSTENGINE:-target/debug/dcgm-sim-hostengine}
scenario=a100-mig-t4
driver_version=570.172.08
lib=/usr/lib/x86_64-linux-gnu/libdcgm.so.4
# Where the socket's folder is mounted in the container.
socket_dir=/run/nvidia-dcgm

work=$(mktemp -d /tmp/gpu-exporter-image-check-dcgm.XXXXXX)
ctrs=()
ctr=
bpid=
hpid=
cleanup() {
  [ -n "$bpid" ] && kill -KILL "$bpid" 2>/dev/null || true
  [ -n "$hpid" ] && kill -TERM "$hpid" 2>/dev/null || true
  local c
  for c in "${ctrs[@]}"; do buildah umount "$c" >/dev/null 2>&1 || true; buildah rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for f in "$nvml_lib" "$dcgm_lib" "$hostengine"; do
  [ -f "$f" ] || fail "$f is missing (cargo build --workspace)"
done
listing() { # listing ROOT: every path with its type, mode, owner and (files) sha256
  (cd "$1" && find . -xdev -printf '%y %m %U:%G %p\n' | while read -r y m o p; do
    if [ "$y" = f ]; then echo "$y $m $o $p $(sha256sum <"$p" | cut -c1-64)"; else echo "$y $m $o $p"; fi
  done) | LC_ALL=C sort
}

# ---- 1. the variant is the default image plus libdcgm.so.4 -----------------------------------
step "the variant $variant against the default image $default"
image_config "$default" "$work/default"
image_config "$variant" "$work/variant"
# shellcheck disable=SC1091
. "$work/default.env"
default_layers_added=$layers_added
grep -v '^layers' "$work/default.env" >"$work/default.settings"
# shellcheck disable=SC1091
. "$work/variant.env"
grep -v '^layers' "$work/variant.env" >"$work/variant.settings"
diff "$work/default.settings" "$work/variant.settings" >&2 \
  || fail "the variant's configuration differs from the default image's (above)"
python3 - "$work/default.json" "$work/variant.json" <<'EOF' || fail "the variant's labels differ from the default image's"
import json, sys
a, b = (json.load(open(p))["OCIv1"]["config"].get("Labels") or {} for p in sys.argv[1:3])
sys.exit(a != b)
EOF
[ "$layers_added" = $(( default_layers_added + 1 )) ] \
  || fail "the variant adds $layers_added COPY layers, the default image $default_layers_added: want one more"

default_ctr=$(buildah from --pull=never "$default"); ctrs+=("$default_ctr")
variant_ctr=$(buildah from --pull=never "$variant"); ctrs+=("$variant_ctr")
default_root=$(buildah mount "$default_ctr")
variant_root=$(buildah mount "$variant_ctr")
found=$(cd "$default_root" && find . -xdev -name 'libdcgm*' | sed 's,^\.,,' | tr '\n' ' ')
[ -z "$found" ] || fail "the default image carries DCGM: $found"
listing "$default_root" >"$work/default.files"
listing "$variant_root" >"$work/variant.files"
added=$(LC_ALL=C comm -13 "$work/default.files" "$work/variant.files" | awk '{print $4}' | sed 's,^\.,,' | tr '\n' ' ')
removed=$(LC_ALL=C comm -23 "$work/default.files" "$work/variant.files" | awk '{print $4}' | sed 's,^\.,,' | tr '\n' ' ')
[ -z "$removed" ] || fail "files of the default image that differ or are missing in the variant: $removed"
[ "$added" = "$lib " ] || fail "the variant adds '$added', want only $lib"
[ -f "$variant_root$lib" ] && [ ! -L "$variant_root$lib" ] || fail "$lib in the variant is not a regular file"
readelf -d "$variant_root$lib" | grep -q 'SONAME.*\[libdcgm\.so\.4\]' || fail "$lib has no SONAME libdcgm.so.4"
lib_bytes=$(stat -c %s "$variant_root$lib")
variant_rootfs=$(du -sb --apparent-size "$variant_root" | awk '{print $1}')
default_rootfs=$(du -sb --apparent-size "$default_root" | awk '{print $1}')

# NVML, as the toolkit injects it, in both containers (the toolkit's ldconfig also puts the
# variant's libdcgm.so.4 in its cache, as it would on a node).
inject_nvml "$variant_root" "$nvml_lib" "$driver_version"
inject_nvml "$default_root" "$nvml_lib" "$driver_version"

# ---- 2. remote mode against a hostengine on a unix socket ---------------------------------------
step "remote mode: dcgm-sim-hostengine --scenario $scenario on a unix socket mounted at $socket_dir"
mkdir -m 0755 "$work/dcgm"
"$hostengine" --scenario "$scenario" --domain-socket "$work/dcgm/nv-hostengine.socket" >"$work/hostengine.log" 2>&1 &
hpid=$!
for _ in $(seq 1 200); do
  grep -q 'listening on' "$work/hostengine.log" && break
  kill -0 "$hpid" 2>/dev/null || { cat "$work/hostengine.log"; fail "dcgm-sim-hostengine exited"; }
  sleep 0.1
done
grep -q 'listening on' "$work/hostengine.log" || { cat "$work/hostengine.log"; fail "dcgm-sim-hostengine did not listen within 20 s"; }
# The image's user connects to it: a socket needs write permission to connect.
chmod 0666 "$work/dcgm/nv-hostengine.socket"

ctr=$variant_ctr
run_opts=(-e "NVML_SIM_SCENARIO=$scenario" -v "$work/dcgm:$socket_dir"
  -e "DCGM_REMOTE_HOSTENGINE_INFO=unix://$socket_dir/nv-hostengine.socket")
port=$(free_port); log=$work/remote.log
t0=$(date +%s.%N)
start "$port" "$log" -f /etc/dcgm-exporter/dcp-metrics-included.csv
wait_code "$port" /ready 200 30 "$log"
check_user "$port"
# DCGM's values arrive with the ticks after the watches are made: wait for them (bounded).
prof='^DCGM_FI_PROF_GR_ENGINE_ACTIVE{'
for _ in $(seq 1 60); do
  http_code "$port" "$work/remote.txt" /metrics >/dev/null
  grep -q '^gpu_exporter_dcgm_up 1$' "$work/remote.txt" && grep -q "$prof.*GPU_I_ID=" "$work/remote.txt" && break
  sleep 0.5
done
prof_s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$(date +%s.%N)")
grep -q '^gpu_exporter_dcgm_up 1$' "$work/remote.txt" \
  || { cat "$log"; grep '^gpu_exporter_dcgm' "$work/remote.txt" || true; fail "gpu_exporter_dcgm_up is not 1 in remote mode"; }
# The model is on gpu_device_info (native's lean label shape): each model's GPU by its UUID.
uuid_of() { grep '^gpu_device_info{' "$work/remote.txt" | grep "modelName=\"[^\"]*$1" | sed -n 's/.*UUID="\([^"]*\)".*/\1/p' | head -1; }
a100=$(uuid_of A100); t4_uuid=$(uuid_of T4)
[ -n "$a100" ] && [ -n "$t4_uuid" ] || { grep '^gpu_device_info' "$work/remote.txt" || true; fail "no gpu_device_info naming the A100 and the T4"; }
mig=$(grep "$prof" "$work/remote.txt" | grep "UUID=\"$a100\"" | grep -c 'GPU_I_ID=' || true)
t4=$(grep "$prof" "$work/remote.txt" | grep -c "UUID=\"$t4_uuid\"" || true)
prof_series=$(grep -c '^DCGM_FI_PROF_' "$work/remote.txt" || true)
[ "$mig" -ge 1 ] || { grep "$prof" "$work/remote.txt" || true; cat "$log"; fail "no DCGM_FI_PROF_GR_ENGINE_ACTIVE for the A100's MIG instances"; }
[ "$t4" -ge 1 ] || { grep "$prof" "$work/remote.txt" || true; fail "no DCGM_FI_PROF_GR_ENGINE_ACTIVE for the T4"; }
grep -q 'DCGM answers' "$log" || { cat "$log"; fail "the log does not say DCGM answers"; }
grep -qi 'simulat' "$log" && { cat "$log"; fail "the exporter log mentions a simulator"; }
stop "$port" "$log"

# ---- 3. no hostengine address: DCGM off, as the default image ----------------------------------
series() { # series FILE: the names and labels of every sample, and every TYPE line
  grep -v '^# HELP' "$1" | sed 's/^\([^#][^ ]*\) .*/\1/' | sort
}
# One hostname for both runs: buildah gives each container its own (its ID), and the host
# label carries it on every series.
run_opts=(-e "NVML_SIM_SCENARIO=$scenario" --hostname image-check)
for which in variant default; do
  step "$which image, no hostengine address: DCGM off"
  if [ "$which" = variant ]; then ctr=$variant_ctr; else ctr=$default_ctr; fi
  port=$(free_port); log=$work/off-$which.log
  start "$port" "$log" -f /etc/dcgm-exporter/dcp-metrics-included.csv
  wait_code "$port" /ready 200 30 "$log"
  sleep 1.5
  http_code "$port" "$work/off-$which.txt" /metrics >/dev/null
  grep -q '^gpu_exporter_dcgm_up' "$work/off-$which.txt" && fail "the $which image reports gpu_exporter_dcgm_up without a hostengine address"
  grep -qi 'dcgm answers\|dcgm is unavailable\|libdcgm' "$log" && { cat "$log"; fail "the $which image's log mentions DCGM without a hostengine address"; }
  stop "$port" "$log"
  series "$work/off-$which.txt" >"$work/off-$which.series"
done
diff "$work/off-default.series" "$work/off-variant.series" >&2 \
  || fail "without a hostengine address the variant serves other series than the default image (above)"
off_series=$(grep -vc '^#' "$work/off-variant.series" || true)

# ---- 4. facts --------------------------------------------------------------------------------------
step "facts"
variant_compressed=$(compressed_bytes "$variant")
default_compressed=$(compressed_bytes "$default")
{
  echo "| Fact | DCGM variant | Default image |"
  echo "|---|---|---|"
  echo "| files it adds to the default image (stable) | \`${added% }\` | none |"
  echo "| layers the Dockerfile adds (stable) | $layers_added | $default_layers_added |"
  echo "| configuration (stable) | the default image's (user, entrypoint, ports, environment, labels) | \`$user\`, \`$entrypoint\` |"
  echo "| unpacked size | $(mib "$variant_rootfs") | $(mib "$default_rootfs") |"
  echo "| compressed layers (what a pull downloads) | $(mib "$variant_compressed") | $(mib "$default_compressed") |"
  echo "| $lib | $(mib "$lib_bytes") (here the simulated library, \`target/debug/libdcgm_sim.so\`) | absent |"
  echo "| remote mode, $scenario, unix socket, $runs_as | ready, \`gpu_exporter_dcgm_up 1\` and DCGM_FI_PROF_GR_ENGINE_ACTIVE on the A100's $mig MIG instances and $t4 T4 after ${prof_s} s; $prof_series DCGM_FI_PROF_* series | — |"
  echo "| no hostengine address, $scenario | DCGM off: the default image's $off_series series | $off_series series |"
} >"$work/facts.md"
cat "$work/facts.md"
facts_block "$facts_file" "$work/facts.md" \
  '<!-- BEGIN image-facts-dcgm: written by tests/image/check-dcgm.sh --write-facts -->' '<!-- END image-facts-dcgm -->' \
  "$variant" "bash scripts/image.sh --local-bases --dcgm --test --write-facts" "$write"
step "passed"
