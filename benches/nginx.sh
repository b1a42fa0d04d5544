#!/usr/bin/env bash
# `/metrics` against nginx serving the same bytes, as BENCHMARKS.md reports it: one run that
# measures, with wrk's latency distribution, the exporter's `/metrics` plain and gzip and
# nginx serving the very bodies the exporter just returned (a plain file, and the gzip file
# through `gzip_static`), so the only difference is the server. p50 and p99 per row, and the
# exporter/nginx p99 ratio for each encoding.
#
# usage (from the repository root, after cargo build --release --workspace; needs the Debian
# packages nginx and wrk):
#   bash benches/nginx.sh target/release/gpu-exporter [SECONDS] [SCENARIO] [CONNECTIONS]
set -euo pipefail
bin=$1
secs=${2:-30} # 10 s runs put the p99 ratio anywhere from 0.8x to 2.1x; 30 s runs agree better
scenario=${3:-h100-mig}
conns=${4:-8}
port=19481
nport=19482
command -v nginx >/dev/null && command -v wrk >/dev/null || {
  echo "benches/nginx.sh needs nginx and wrk (apt-get install nginx wrk)" >&2
  exit 2
}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null; rm -rf "$work"' EXIT

"$bin" --simulate "$scenario" -c 1000 -a 127.0.0.1:$port >"$work/exporter.log" 2>&1 &
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/ready" && break; sleep 0.1; done
sleep 3 # a few ticks: rates and windows need two samples before every family is there
mkdir -p "$work/www"
curl -s "http://127.0.0.1:$port/metrics" -o "$work/www/metrics"
curl -s -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics" -o "$work/www/metrics.gz"
cat >"$work/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  # tcp_nopush (TCP_CORK while sendfile runs), Debian's default, gave nginx a p99 of about
  # 37 ms on this 126 KB page in every run (its p50 0.3 ms): a loopback artefact, not the
  # server's tail, and a comparison against it flattered the exporter.
  tcp_nopush off;
  default_type text/plain;
  client_body_temp_path $work;
  proxy_temp_path $work;
  fastcgi_temp_path $work;
  uwsgi_temp_path $work;
  scgi_temp_path $work;
  server {
    listen 127.0.0.1:$nport;
    root $work/www;
    gzip_static on;
    location = /metrics { }
  }
}
EOF
nginx -c "$work/nginx.conf"
sleep 0.5

run() { # label url [header]
  local label=$1 url=$2; shift 2
  local out
  out=$(wrk -t 2 -c "$conns" -d "${secs}s" --latency "$@" "$url")
  local p50 p99 rps bytes
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  bytes=$(curl -s "$@" -o /dev/null -w '%{size_download}' "$url")
  printf '| %s | %s | %s | %s | %s |\n' "$label" "$bytes" "$p50" "$p99" "$rps"
  echo "$label $p99" >>"$work/p99"
}
gz=(-H 'Accept-Encoding: gzip')
echo "wrk -t 2 -c $conns -d ${secs}s --latency, $scenario node, exporter at -c 1000"
printf '| Server | Body bytes | p50 | p99 | req/s |\n|---|---|---|---|---|\n'
run "gpu-exporter plain" "http://127.0.0.1:$port/metrics"
run "nginx plain" "http://127.0.0.1:$nport/metrics"
run "gpu-exporter gzip" "http://127.0.0.1:$port/metrics" "${gz[@]}"
run "nginx gzip" "http://127.0.0.1:$nport/metrics" "${gz[@]}"
# wrk prints latencies with units (us, ms, s): normalise to µs for the ratios.
awk '{ v = $NF; u = v; sub(/[0-9.]+/, "", u); n = v + 0;
       if (u == "ms") n *= 1000; else if (u == "s") n *= 1000000;
       p[NR] = n }
     END { printf "p99 ratio gpu-exporter/nginx: plain %.2f×, gzip %.2f×\n", p[1] / p[2], p[3] / p[4] }' "$work/p99"
