#!/usr/bin/env bash
# Copies the files the Helm chart ships from the top of the repository into the chart
# (Helm cannot read outside a chart): counters/*.csv, dashboards/*.json and
# alerts/gpu-exporter.rules.yaml → deploy/helm/gpu-exporter/files/.
#
#   deploy/sync.sh [--check] [CHART_DIR]
#
# --check changes nothing: it lists every copy that is missing, stale or extra and exits 1.
# CHART_DIR (default deploy/helm/gpu-exporter) lets deploy/render.sh sync a scratch copy.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
chart="${1:-$root/deploy/helm/gpu-exporter}"

# source (relative to the repository root) → destination (relative to the chart)
pairs=()
for f in "$root"/counters/*.csv; do pairs+=("counters/$(basename "$f")" "files/counters/$(basename "$f")"); done
for f in "$root"/dashboards/*.json; do pairs+=("dashboards/$(basename "$f")" "files/dashboards/$(basename "$f")"); done
pairs+=("alerts/gpu-exporter.rules.yaml" "files/alerts/gpu-exporter.rules.yaml")

drift=0
wanted=()
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
  src="$root/${pairs[i]}"
  dst="$chart/${pairs[i + 1]}"
  wanted+=("${pairs[i + 1]}")
  if [ -f "$dst" ] && cmp -s "$src" "$dst"; then continue; fi
  if [ "$check" = 1 ]; then
    if [ -f "$dst" ]; then
      echo "sync: ${pairs[i + 1]} differs from ${pairs[i]}" >&2
      diff -u "$src" "$dst" | head -n 40 >&2 || true
    else
      echo "sync: ${pairs[i + 1]} is missing (copy of ${pairs[i]})" >&2
    fi
    drift=1
  else
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst"
    echo "sync: ${pairs[i]} → ${dst#"$root"/}" >&2
  fi
done

# Copies whose source is gone.
if [ -d "$chart/files" ]; then
  while IFS= read -r f; do
    rel="${f#"$chart"/}"
    keep=0
    for w in "${wanted[@]}"; do [ "$w" = "$rel" ] && keep=1 && break; done
    [ "$keep" = 1 ] && continue
    if [ "$check" = 1 ]; then
      echo "sync: $rel has no source at the top of the repository" >&2
      drift=1
    else
      rm -f "$f"
      echo "sync: removed $rel (its source is gone)" >&2
    fi
  done < <(find "$chart/files" -type f | LC_ALL=C sort)
fi

if [ "$check" = 1 ] && [ "$drift" = 1 ]; then
  echo "sync: the chart's copies are out of date: run deploy/sync.sh (or deploy/render.sh)" >&2
  exit 1
fi
