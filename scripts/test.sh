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
# STORM_PY_BUILD=compiled runs the suite on the compiled build: a wheel with the hot modules compiled by mypyc
# (setup.py), installed into build/compiled-site, which goes first on every process's path; pytest runs as a
# script and appends the tree, so the source tree's pure modules come after it
pytest=(.venv/bin/python -m pytest)
case "${STORM_PY_BUILD:-pure}" in
    pure) ;;
    compiled)
        site=$(./scripts/compiled-build.sh)
        if [ -z "$site" ]; then echo "STORM_PY_BUILD=compiled needs a C compiler" >&2; exit 2; fi
        export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
        pytest=(.venv/bin/pytest --import-mode=append)
        ;;
    *) echo "STORM_PY_BUILD must be pure or compiled, not ${STORM_PY_BUILD}" >&2; exit 2 ;;
esac
# -P: not the tree's own storm_py from the current directory, the one the suite imports
.venv/bin/python -P -c 'import storm_py.build as b; print("storm_py build under test:", b.describe())'
set +e
"${pytest[@]}" "${verbosity[@]}" "$@"
rc=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure of the suite, not a success
exit $rc
