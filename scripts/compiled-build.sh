#!/usr/bin/env bash
# Builds the compiled storm_py (hot modules compiled by mypyc, setup.py) into build/compiled-site and prints that
# directory; rebuilt only when a source file is newer than the last build.  Without a C compiler it prints nothing
# and says so on stderr: callers then run the pure-Python install.
set -euo pipefail
cd "$(dirname "$0")/.."
site=build/compiled-site
stamp=$site/.storm_py-built
if ! command -v "${CC:-gcc}" >/dev/null 2>&1; then
    echo "compiled build: no C compiler, using the pure-Python build" >&2
    exit 0
fi
if [ ! -f "$stamp" ] || [ -n "$(find storm_py setup.py setup.cfg -newer "$stamp" -print -quit)" ]; then
    echo "compiled build: compiling storm_py's hot modules with mypyc into $site (about a minute)" >&2
    # setuptools' own outputs too: a shared library of an earlier module list would otherwise ride along in the
    # wheel and clash with the new one at import
    rm -rf build/compiled-wheel "$site" build/lib.* build/temp.* build/bdist.* build/__native_* build/storm_py
    STORM_PY_COMPILE=1 .venv/bin/python -m pip wheel -q --no-deps --no-build-isolation -w build/compiled-wheel . >&2
    .venv/bin/python -m pip install -q --no-deps --target "$site" build/compiled-wheel/storm_py-*.whl >&2
    touch "$stamp"
fi
echo "$PWD/$site"
