#!/usr/bin/env bash
# The main demo: storm-starter's word count in an in-process LocalCluster for 10 seconds, with live progress.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
# the compiled build when this machine has a C compiler (the pure-Python install otherwise)
site=$(./scripts/compiled-build.sh)
export PYTHONPATH="${site:+$site:}$PWD${PYTHONPATH:+:$PYTHONPATH}"
.venv/bin/python -P -c 'import storm_py.build as b; print("storm_py build:", b.describe())'
exec .venv/bin/python -P -m storm_py local examples.word_count:build --ttl "${TTL:-10}"
