#!/usr/bin/env bash
# Pod churn on simulated batch nodes: 8 nodes in the default (native) shape and 8 in the
# dcgm-4.8.4 shape, a new job pod per GPU every 10 s for 10 minutes, each shape scraped by its
# own real Prometheus with the shipped rules; then the same nodes with pods that stay. Prints
# series created per job, head series, Prometheus RSS and rule evaluation time for both.
# Every option and what it measures: benches/churn.py (python3 benches/churn.py --help);
# the figures: BENCHMARKS.md (Churn) and docs/sizing.md. Needs cargo build --release --workspace
# (or --bin) and Debian's prometheus. Not run by CI: it takes about 17 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 benches/churn.py "$@"
