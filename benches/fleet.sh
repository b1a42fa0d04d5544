#!/usr/bin/env bash
# A simulated GPU fleet (separate exporter processes, about 1,000 GPUs by default) through one
# real Prometheus with the shipped rules and, by remote_write, VictoriaMetrics: head series,
# RSS, samples/s, bytes per sample and the time of every dashboard panel, per configuration.
# Every option and what it measures: benches/fleet.py (python3 benches/fleet.py --help);
# the figures: docs/sizing.md. scripts/test.sh runs `--short --check` (about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 benches/fleet.py "$@"
