#!/usr/bin/env bash
# The main demo: storm-starter's word count in an in-process LocalCluster for 10 seconds, with live progress.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec .venv/bin/storm-py local examples.word_count:build --ttl "${TTL:-10}"
