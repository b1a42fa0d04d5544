#!/usr/bin/env bash
#! scripts/hardware-run.sh: runs a built exporter against a real GPU node's NVML and gathers what
#! docs/hardware.md asks to record (check reports, expositions idle and under load, CPU time,
#! shutdown time, NVML facts read by a second client). It reads the GPU and changes no setting:
#! no MIG mode, clocks, power limit or reset. It must not be run by CI (CI has no GPU).
#
# usage: scripts/hardware-run.sh BINARY OUTDIR
#   BINARY  the exporter built on another machine (`cargo build --release --no-default-features`)
#   OUTDIR  where the reports go; summary.txt is the one to read first
# A GPU load is made with PyTorch when `python3 -c 'import torch'` works; otherwise idle only.
set -u
BIN=${1:?usage: hardware-run.sh BINARY OUTDIR}
OUTDIR=${2:?usage: hardware-run.sh BINARY OUTDIR}
mkdir -p "$OUTDIR"
SUMMARY=$OUTDIR/summary.txt
exec > >(tee -a "$SUMMARY") 2>&1
section() { printf '\n=== %s ===\n' "$*"; }
now() { date +%s.%N; }

# The exporter runs as an ordinary user, as in the image: binary and counters in a world-readable
# place outside the (root-owned) checkout.
STAGE=$(mktemp -d /tmp/ge.XXXXXX)
cp "$BIN" "$STAGE/gpu-exporter"
cp counters/default-counters.csv counters/dcp-metrics-included.csv "$STAGE/"
chmod 755 "$STAGE" "$STAGE/gpu-exporter"
chmod 644 "$STAGE"/*.csv
GE=$STAGE/gpu-exporter

section machine
date -u
uname -a
nvidia-smi || true
nvidia-smi --query-gpu=name,uuid,driver_version,mig.mode.current,pci.bus_id,power.limit,temperature.gpu --format=csv || true
nvidia-smi -q >"$OUTDIR/nvidia-smi-q.txt" 2>&1 || true
nvidia-smi nvlink -s 2>&1 | head -20 || true
ldconfig -p | grep -E 'nvidia-ml|dcgm' || echo "no libdcgm in the loader cache"
ls -l /dev/nvidia* 2>&1 | head -20
"$GE" --version

section "check, default counters (as root)"
timeout 120 "$GE" check --hardware-report -f "$STAGE/default-counters.csv" >"$OUTDIR/check-default.md" 2>&1
echo "check rc=$?"
section "check, profiling counters (as root)"
timeout 120 "$GE" check --hardware-report -f "$STAGE/dcp-metrics-included.csv" >"$OUTDIR/check-dcp.md" 2>&1
echo "check rc=$?"
timeout 120 "$GE" check --output json -f "$STAGE/dcp-metrics-included.csv" >"$OUTDIR/check-dcp.json" 2>&1
echo "check json rc=$?"
cat "$OUTDIR/check-dcp.md" | head -120

# The NVML facts the simulator assumes, read by NVIDIA's own Python binding (a second client).
section "NVML facts (pynvml)"
timeout 60 python3 - <<'EOF' 2>&1 || echo "pynvml probe failed"
import pynvml as n
n.nvmlInit()
print("driver", n.nvmlSystemGetDriverVersion(), "nvml", n.nvmlSystemGetNVMLVersion())
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    print("gpu", i, n.nvmlDeviceGetName(h), n.nvmlDeviceGetUUID(h))
    def tryit(label, f):
        try:
            print(" ", label, f())
        except Exception as e:
            print(" ", label, "ERROR", type(e).__name__, e)
    tryit("supported event types (hex)", lambda: hex(n.nvmlDeviceGetSupportedEventTypes(h)))
    tryit("mig mode (current, pending)", lambda: n.nvmlDeviceGetMigMode(h))
    tryit("max mig device count", lambda: n.nvmlDeviceGetMaxMigDeviceCount(h))
    tryit("gpm supported", lambda: n.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
    tryit("clock event reasons (hex)", lambda: hex(n.nvmlDeviceGetCurrentClocksEventReasons(h)))
    tryit("row remap (corr, unc, pending, failed)", lambda: n.nvmlDeviceGetRemappedRows(h))
    tryit("fabric info", lambda: n.nvmlDeviceGetGpuFabricInfo(h))
    tryit("persistence mode", lambda: n.nvmlDeviceGetPersistenceMode(h))
    for lk in range(18):
        try:
            st = n.nvmlDeviceGetNvLinkState(h, lk)
            print("  nvlink", lk, "state", st)
        except Exception as e:
            print("  nvlink", lk, "ERROR", e)
            break
    # field ids from nvml.h: 230 NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 91 NVLINK_LINK_COUNT,
    # 138/139 NVLink data tx/rx (scope: all links)
    for fid, name in [(230, "recovery action"), (91, "nvlink link count"),
                      (138, "nvlink tx all"), (139, "nvlink rx all")]:
        try:
            vals = n.nvmlDeviceGetFieldValues(h, [fid])
            v = vals[0]
            print("  field", fid, name, "ret", v.nvmlReturn, "type", v.valueType,
                  "ts", v.timestamp, "val", v.value.ullVal)
        except Exception as e:
            print("  field", fid, name, "ERROR", e)
n.nvmlShutdown()
EOF

section "exporter as uid 65534 (nobody), profiling counters, -c 1000"
setpriv --reuid=65534 --regid=65534 --clear-groups "$GE" -a 127.0.0.1:9400 \
    -f "$STAGE/dcp-metrics-included.csv" -c 1000 --enable-exporter-metrics \
    >"$OUTDIR/exporter-nobody.log" 2>&1 &
PID=$!
section "exporter as root, default counters, --nvlink-links=totals, -c 1000"
"$GE" -a 127.0.0.1:9401 -c 1000 --nvlink-links=totals -f "$STAGE/default-counters.csv" \
    >"$OUTDIR/exporter-root-totals.log" 2>&1 &
PID2=$!
sleep 6
curl -s -o /dev/null -w 'ready %{http_code}\n' http://127.0.0.1:9400/ready
curl -s http://127.0.0.1:9400/metrics >"$OUTDIR/metrics-idle.txt"
curl -s http://127.0.0.1:9401/metrics >"$OUTDIR/metrics-root-totals.txt"
curl -s http://127.0.0.1:9400/status >"$OUTDIR/status-idle.json"
curl -s http://127.0.0.1:9400/ >"$OUTDIR/landing.html"
nvidia-smi --query-gpu=utilization.gpu,power.draw,temperature.gpu,clocks.sm,clocks.mem,memory.used --format=csv
grep -E '^(DCGM_FI_DEV_(GPU_UTIL|POWER_USAGE|GPU_TEMP|SM_CLOCK|MEM_CLOCK|FB_USED)|gpu_exporter_sample_duration_seconds|gpu_exporter_field_unsupported)' \
    "$OUTDIR/metrics-idle.txt" | head -40

section "idle CPU time over 30 s (both exporters)"
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
tck=$(getconf CLK_TCK)
a1=$(cpu $PID); b1=$(cpu $PID2); t1=$(now)
sleep 30
a2=$(cpu $PID); b2=$(cpu $PID2); t2=$(now)
awk -v a=$((a2 - a1)) -v b=$((b2 - b1)) -v k="$tck" -v t1="$t1" -v t2="$t2" \
    'BEGIN{ w=t2-t1; printf "nobody/dcp: %.3f s CPU in %.1f s (%.2f%%)\nroot/totals: %.3f s CPU in %.1f s (%.2f%%)\n", a/k, w, 100*a/k/w, b/k, w, 100*b/k/w }'
grep -E 'VmRSS|Threads' /proc/$PID/status

section "load: bf16 matmul 25 s, then host-to-device copies 15 s"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    python3 - >"$OUTDIR/load.log" 2>&1 <<'EOF' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 25:
    for _ in range(20):
        c = a @ a
    torch.cuda.synchronize()
print("matmul done", flush=True)
h = torch.empty(1 << 28, dtype=torch.uint8).pin_memory()
d = torch.empty(1 << 28, dtype=torch.uint8, device="cuda")
t = time.time()
n = 0
while time.time() - t < 15:
    d.copy_(h, non_blocking=True); n += 1
    if n % 10 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print("copies", n, "bytes", n * (1 << 28), "in", time.time() - t, flush=True)
EOF
    LOAD=$!
    for s in 8 18; do
        sleep 10
        curl -s http://127.0.0.1:9400/metrics >"$OUTDIR/metrics-matmul-$s.txt"
        nvidia-smi --query-gpu=utilization.gpu,power.draw,temperature.gpu,clocks.sm,memory.used,clocks_event_reasons.active --format=csv,noheader
        grep -E '^(DCGM_FI_PROF_|DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_POWER_USAGE)' "$OUTDIR/metrics-matmul-$s.txt" | head -30
    done
    sleep 12
    curl -s http://127.0.0.1:9400/metrics >"$OUTDIR/metrics-copy.txt"
    grep -E '^(DCGM_FI_PROF_PCIE|DCGM_FI_PROF_DRAM|DCGM_FI_DEV_GPU_UTIL)' "$OUTDIR/metrics-copy.txt" | head -10
    wait $LOAD
    cat "$OUTDIR/load.log"
    sleep 3
    curl -s http://127.0.0.1:9400/metrics >"$OUTDIR/metrics-after.txt"
else
    echo "no torch with CUDA: idle only"
fi

section "SIGTERM to exit"
t1=$(now)
kill -TERM $PID $PID2
wait $PID; rc=$?
t2=$(now)
awk -v a="$t1" -v b="$t2" -v rc=$rc 'BEGIN{printf "nobody exporter exited rc=%d after %.2f s\n", rc, b-a}'
wait $PID2; echo "root exporter rc=$?"
section "exporter logs"
head -40 "$OUTDIR/exporter-nobody.log"
grep -v -i ' info ' "$OUTDIR/exporter-root-totals.log" | head -20
rm -rf "$STAGE"
