#!/usr/bin/env bash
# The full test suite, real ZooKeeper included (installed first if missing); extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh --with-services
.venv/bin/ruff check storm_py tests examples bench
.venv/bin/mypy storm_py
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a success
exit $rc
