#!/usr/bin/env bash
# The full test suite, real components included (installed first if missing); extra arguments go to pytest.
# The unit tier (tests/unit) runs first, then the process tier.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh --with-services
.venv/bin/ruff check storm_py tests examples bench
.venv/bin/mypy storm_py
# -q unless the caller chose a verbosity: a second -q would swallow pytest's summary line
verbosity=(-q)
for arg in "$@"; do
    case "$arg" in
        -q|-qq|-v|-vv|-vvv|--quiet|--verbose|--verbosity=*) verbosity=() ;;
    esac
done
set +e
.venv/bin/python -m pytest "${verbosity[@]}" "$@"
rc=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a success
exit $rc
