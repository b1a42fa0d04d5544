# Helpers shared by tests/image/check.sh and tests/image/check-dcgm.sh: sourced, never run.
# They read an image's configuration, run its entrypoint with `buildah run --isolation chroot`
# as the image's user, inject the simulated NVML as the NVIDIA container toolkit injects the
# real one, and keep a facts block of docs/container-image.md. The caller sets `work` (a
# scratch folder), `ctr` (the working container `start` runs in) and `entrypoint` and `user`
# (from image_config); `run_opts` holds extra `buildah run` options (-e, -v) for `start`.

fail() { echo "IMAGE CHECK FAILED: $*" >&2; exit 1; }
# facts_options SCRIPT ARGS...: the options after the images: `--write-facts FILE` sets
# facts_file and write; without it facts_file is docs/container-image.md and write is empty.
facts_options() {
  local me=$1; shift
  facts_file=docs/container-image.md
  write=
  while [ $# -gt 0 ]; do
    case "$1" in
      --write-facts) facts_file=${2:?--write-facts needs a file}; write=1; shift 2 ;;
      *) echo "$me: unknown argument $1" >&2; exit 2 ;;
    esac
  done
}
step() { echo "==> image check: $*"; }
run_opts=()
bpid=

# image_config IMAGE PREFIX: `buildah inspect` into PREFIX.json and the settings the checks
# read (user, entrypoint, cmd, ports, workdir, env, layers, layers_added, version_label) as
# shell assignments into PREFIX.env.
image_config() {
  buildah inspect --type image "$1" >"$2.json" || fail "no image $1"
  python3 - "$2.json" >"$2.env" <<'EOF'
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
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
exporter_pid() { # the exporter process started by buildah run (argv[0] is the entrypoint)
  local p
  for p in $(pgrep -f "^/usr/bin/gpu-exporter .*127\.0\.0\.1:$1" || true); do echo "$p"; return; done
}
start() { # start PORT LOG ARGS...: runs the image's entrypoint with ARGS as the image's user
  local port=$1 log=$2; shift 2
  local -a cmd
  mapfile -t cmd < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$entrypoint")
  buildah run --isolation chroot "${run_opts[@]}" "$ctr" -- "${cmd[@]}" -a "127.0.0.1:$port" "$@" >"$log" 2>&1 &
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
stop() { # stop PORT LOG: SIGTERM to the exporter, which must exit 0
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

# inject_nvml ROOT SIM_LIB DRIVER_VERSION: what the toolkit does at container start on a
# Debian-based image. The library goes to /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.<driver
# version>, then the toolkit's update-ldcache: the host's ldconfig, in the container's root,
# with the container's /etc/ld.so.conf, writing the container's /etc/ld.so.cache (and the
# libnvidia-ml.so.1 link, from the SONAME).
inject_nvml() {
  local libdir=$1/usr/lib/x86_64-linux-gnu
  mkdir -p "$libdir"
  cp "$2" "$libdir/libnvidia-ml.so.$3"
  chmod 0755 "$libdir/libnvidia-ml.so.$3"
  ldconfig -r "$1" -f /etc/ld.so.conf -C /etc/ld.so.cache
  [ "$(readlink "$libdir/libnvidia-ml.so.1")" = "libnvidia-ml.so.$3" ] \
    || fail "ldconfig did not create the libnvidia-ml.so.1 link"
}

mib() { python3 -c "import sys; print(f'{int(sys.argv[1]) / 1048576:.1f} MiB ({int(sys.argv[1]):,} bytes)')" "$1"; }

# compressed_bytes IMAGE: the sum of the image's layer blobs as `buildah push oci:` writes them
# (what a pull downloads).
compressed_bytes() {
  rm -rf "$work/oci"
  buildah push --quiet "$1" "oci:$work/oci:facts" >/dev/null
  python3 - "$work/oci" <<'EOF'
import json, os, sys
root = sys.argv[1]
idx = json.load(open(os.path.join(root, "index.json")))
def blob(d):
    return os.path.join(root, "blobs", *d["digest"].split(":", 1))
m = json.load(open(blob(idx["manifests"][0])))
print(sum(l["size"] for l in m["layers"]))
EOF
}

# facts_block FILE FACTS BEGIN END IMAGE COMMAND WRITE: with WRITE non-empty, FACTS (a
# markdown table) replaces what lies between FILE's lines BEGIN and END, headed by the date,
# the commit, the COMMAND that measured it and IMAGE; otherwise its rows marked "(stable)" must
# equal the recorded ones.
facts_block() {
  local begin=$3 end=$4
  if [ -n "$7" ]; then
    python3 - "$1" "$2" "$begin" "$end" "$5" "$6" <<'EOF'
import sys, datetime, subprocess
path, facts, begin, end, image, command = sys.argv[1:7]
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: no markers {begin} ... {end}")
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
body = (f"\nMeasured on {stamp} (commit {rev}) by `{command}` on the image `{image}`:\n\n"
        + open(facts).read() + "\n")
open(path, "w").write(head + begin + body + end + tail)
print(f"==> wrote the facts into {path}")
EOF
  else
    python3 - "$1" "$2" "$begin" "$end" "$6" <<'EOF'
import sys
path, facts, begin, end, command = sys.argv[1:6]
text = open(path).read()
if begin not in text or end not in text:
    sys.exit(f"{path}: no markers {begin} (run {command})")
recorded = text.split(begin, 1)[1].split(end, 1)[0]
stable = lambda t: sorted(l for l in t.splitlines() if "(stable)" in l)
want, got = stable(recorded), stable(open(facts).read())
if want != got:
    print(f"{path} records other facts than the image has; rerun {command}")
    for l in sorted(set(want) - set(got)):
        print("  recorded:", l)
    for l in sorted(set(got) - set(want)):
        print("  measured:", l)
    sys.exit(1)
print(f"==> the stable facts recorded in {path} match the image")
EOF
  fi
}
