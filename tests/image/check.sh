#!/usr/bin/env bash
# Runs a built gpu-exporter image as a user would and fails if it does not behave
# (docs/container-image.md "What CI checks on the built image"). Called by scripts/image.sh
# --test, which .ci/run uses; it can also be run alone on an image already built:
#
#   bash tests/image/check.sh IMAGE [--write-facts docs/container-image.md]
#
# 1. The image's configuration: numeric non-root USER, the ENTRYPOINT, port 9400, no shell and
#    no package manager in its file system.
# 2. Without NVML: the exporter stays up, /ready answers 503, /metrics answers, and the log says
#    where libnvidia-ml.so.1 was looked for; SIGTERM ends it with status 0.
# 3. With libnvidia-ml.so.1 injected as the NVIDIA container toolkit does it on a Debian-based
#    image: the library (here the simulated one, target/debug/libnvml_sim.so, whose SONAME is
#    libnvidia-ml.so.1) is put at /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driver version>
#    and the toolkit's update-ldcache step is replayed: the host's ldconfig run on the
#    container's root, which creates the libnvidia-ml.so.1 link and /etc/ld.so.cache. The
#    exporter, given no --nvml-lib, must load it, run as the image's user, become ready and
#    serve every simulated GPU on /metrics.
# 4. Each counters file the image ships loads: the exporter runs with -f on it (dcgm-4.9 files
#    with --compatibility dcgm-4.9), becomes ready and serves its metrics.
# 5. The measured facts (size, layers, user, entrypoint, contents) are printed; with
#    --write-facts they replace the block between the image-facts markers of the given file,
#    and without it the facts that do not depend on the toolchain (everything but sizes and
#    times) must equal the ones recorded there.
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${1:?usage: tests/image/check.sh IMAGE [--write-facts FILE]}
shift
facts_file=
write=
while [ $# -gt 0 ]; do
  case "$1" in
    --write-facts) facts_file=${2:?--write-facts needs a file}; write=1; shift 2 ;;
    *) echo "tests/image/check.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$facts_file" ] || facts_file=docs/container-image.md
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
fail() { echo "IMAGE CHECK FAILED: $*" >&2; exit 1; }
step() { echo "==> image check: $*"; }

[ -f "$sim_lib" ] || fail "$sim_lib is missing (cargo build -p nvml-sim)"
readelf -d "$sim_lib" | grep -q 'SONAME.*\[libnvidia-ml\.so\.1\]' \
  || fail "$sim_lib has no SONAME libnvidia-ml.so.1 (crates/nvml-sim/build.rs)"

# ---- 1. configuration and file system ----------------------------------------------------
step "configuration of $image"
buildah inspect --type image "$image" >"$work/inspect.json" || fail "no image $image"
python3 - "$work/inspect.json" >"$work/config.env" <<'EOF'
import json, shlex, sys
d = json.load(open(sys.argv[1]))
c = d["OCIv1"]["config"]
out = {
    "user": c.get("User", ""),
    "entrypoint": json.dumps(c.get("Entrypoint") or []),
    "cmd": json.dumps(c.get("Cmd") or []),
    "ports": " ".join(sorted((c.get("ExposedPorts") or {}).keys())),
    "workdir": c.get("WorkingDir", ""),
    "env": " ".join(c.get("Env") or []),
    "layers": str(len(d["OCIv1"]["rootfs"]["diff_ids"])),
    # The layers the Dockerfile's runtime stage adds (its COPY steps): the same on the
    # stand-in base and on distroless, unlike the total.
    "layers_added": str(sum(
        1 for h in d["OCIv1"].get("history") or []
        if not h.get("empty_layer") and " COPY " in f' {h.get("created_by", "")} '
    )),
    "version_label": (c.get("Labels") or {}).get("org.opencontainers.image.version", ""),
}
for k, v in out.items():
    print(f"{k}={shlex.quote(v)}")
EOF
# shellcheck disable=SC1091
. "$work/config.env"
case "$user" in
  [0-9]*:[0-9]*) ;;
  *) fail "USER is '$user', not numeric uid:gid (Kubernetes' runAsNonRoot cannot verify a name)" ;;
esac
[ "${user%%:*}" != 0 ] || fail "USER is root ($user)"
[ "$entrypoint" = '["/usr/bin/gpu-exporter"]' ] || fail "ENTRYPOINT is $entrypoint"
[ "$ports" = "9400/tcp" ] || fail "exposed ports are '$ports', not 9400/tcp"

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
counters=$(cd "$mnt/etc/dcgm-exporter" && ls ./*.csv | sed 's,^\./,,' | tr '\n' ' ')
[ -n "$counters" ] || fail "no counters files in /etc/dcgm-exporter"
if strings "$mnt/usr/bin/gpu-exporter" | grep -q 'nvmlSimConfigure'; then
  fail "the image's binary carries the simulator (built with the sim feature)"
fi
execs=$(cd "$mnt" && find . -xdev -type f -perm -u+x ! -name '*.so*' | sed 's,^\.,,' | sort | tr '\n' ' ')
files=$(cd "$mnt" && find . -xdev -type f | wc -l)
rootfs_bytes=$(du -sb --apparent-size "$mnt" | awk '{print $1}')
binary_bytes=$(stat -c %s "$mnt/usr/bin/gpu-exporter")

# ---- helpers to run the entrypoint in the image ---------------------------------------------
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
exporter_pid() { # the exporter process started by buildah run (argv[0] is the entrypoint)
  local p
  for p in $(pgrep -f "^/usr/bin/gpu-exporter .*127\.0\.0\.1:$1" || true); do echo "$p"; return; done
}
start() { # start PORT LOG ARGS...: runs the image's entrypoint with ARGS as the image's user
  local port=$1 log=$2; shift 2
  local -a cmd
  mapfile -t cmd < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$entrypoint")
  buildah run --isolation chroot "$ctr" -- "${cmd[@]}" -a "127.0.0.1:$port" "$@" >"$log" 2>&1 &
  bpid=$!
}
http_code() { curl -s -o "${2:-/dev/null}" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$1$3" || true; }
wait_code() { # wait_code PORT PATH CODE SECONDS LOG
  local i
  for i in $(seq 1 $(( $4 * 10 ))); do
    [ "$(http_code "$1" /dev/null "$2")" = "$3" ] && return 0
    kill -0 "$bpid" 2>/dev/null || { cat "$5"; fail "the exporter exited before $2 answered $3"; }
    sleep 0.1
  done
  cat "$5"; fail "$2 did not answer $3 within $4 s"
}
stop() { # stop LOG: SIGTERM to the exporter, which must exit 0
  local pid rc=0
  pid=$(exporter_pid "$1")
  [ -n "$pid" ] || fail "no exporter process to stop"
  kill -TERM "$pid"
  wait "$bpid" || rc=$?
  bpid=
  [ "$rc" = 0 ] || { cat "$2"; fail "the exporter exited with status $rc after SIGTERM"; }
}
check_user() { # the exporter runs as the image's numeric user
  local pid uid gid
  pid=$(exporter_pid "$1")
  [ -n "$pid" ] || fail "cannot find the exporter process"
  uid=$(awk '/^Uid:/{print $2, $3, $4, $5}' "/proc/$pid/status")
  gid=$(awk '/^Gid:/{print $2, $3, $4, $5}' "/proc/$pid/status")
  local want_uid=${user%%:*} want_gid=${user##*:}
  [ "$uid" = "$want_uid $want_uid $want_uid $want_uid" ] || fail "exporter uids are '$uid', want $want_uid"
  [ "$gid" = "$want_gid $want_gid $want_gid $want_gid" ] || fail "exporter gids are '$gid', want $want_gid"
  runs_as="uid $want_uid, gid $want_gid (real, effective, saved and file-system ids in /proc/PID/status)"
}

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
libdir=$mnt/usr/lib/x86_64-linux-gnu
mkdir -p "$libdir"
cp "$sim_lib" "$libdir/libnvidia-ml.so.$driver_version"
chmod 0755 "$libdir/libnvidia-ml.so.$driver_version"
# The toolkit's update-ldcache: the host's ldconfig, in the container's root, with the
# container's /etc/ld.so.conf, writing the container's /etc/ld.so.cache.
ldconfig -r "$mnt" -f /etc/ld.so.conf -C /etc/ld.so.cache
[ "$(readlink "$libdir/libnvidia-ml.so.1")" = "libnvidia-ml.so.$driver_version" ] \
  || fail "ldconfig did not create the libnvidia-ml.so.1 link"
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
  case "$f" in dcgm-4.9-*) args+=(--compatibility dcgm-4.9) ;; esac
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
buildah push --quiet "$image" "oci:$work/oci:facts" >/dev/null
compressed=$(python3 - "$work/oci" <<'EOF'
import json, os, sys
root = sys.argv[1]
idx = json.load(open(os.path.join(root, "index.json")))
def blob(d):
    return os.path.join(root, "blobs", *d["digest"].split(":", 1))
m = json.load(open(blob(idx["manifests"][0])))
print(sum(l["size"] for l in m["layers"]))
EOF
)
history=$(python3 - "$work/inspect.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [h.get("created_by", "").replace("|", "\\|").strip() for h in d["OCIv1"].get("history", []) if not h.get("empty_layer")]
print("; ".join(r[:90] for r in rows))
EOF
)
mib() { python3 -c "import sys; print(f'{int(sys.argv[1]) / 1048576:.1f} MiB ({int(sys.argv[1]):,} bytes)')" "$1"; }
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
  echo "| /usr/bin/gpu-exporter | $(mib "$binary_bytes"), no debug info, no simulator |"
  echo "| without NVML | /ready 503, /metrics 200; log: \`${no_nvml_line//|/\\|}\` |"
  echo "| with libnvidia-ml.so.1 injected | ready after ${ready_s} s, $gpus GPUs, $series DCGM_FI_* series |"
  echo "| counters files loaded | ${counters_checked[*]} |"
} >"$work/facts.md"
cat "$work/facts.md"

begin='<!-- BEGIN image-facts: written by tests/image/check.sh --write-facts -->'
end='<!-- END image-facts -->'
if [ -n "$write" ]; then
  python3 - "$facts_file" "$work/facts.md" "$begin" "$end" "$image" <<'EOF'
import sys, datetime, subprocess
path, facts, begin, end, image = sys.argv[1:6]
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: no image-facts markers")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
body = (f"\nMeasured on {stamp} (commit {rev}) by `bash scripts/image.sh --local-bases --test "
        f"--write-facts` on the image `{image}`:\n\n" + open(facts).read() + "\n")
open(path, "w").write(head + begin + body + end + tail)
print(f"==> wrote the facts into {path}")
EOF
else
  python3 - "$facts_file" "$work/facts.md" "$begin" "$end" <<'EOF'
import sys
path, facts, begin, end = sys.argv[1:5]
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: no image-facts markers (run scripts/image.sh --local-bases --test --write-facts)")
recorded = text.split(begin, 1)[1].split(end, 1)[0]
stable = lambda t: sorted(l for l in t.splitlines() if "(stable)" in l)
want, got = stable(recorded), stable(open(facts).read())
if want != got:
    print(f"{path} records other facts than the image has; rerun scripts/image.sh --local-bases --test --write-facts")
    for l in sorted(set(want) - set(got)):
        print("  recorded:", l)
    for l in sorted(set(got) - set(want)):
        print("  measured:", l)
    sys.exit(1)
print(f"==> the stable facts recorded in {path} match the image")
EOF
fi
step "passed"
