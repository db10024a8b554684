#!/usr/bin/env bash
# Installs what storm_py needs on a fresh machine: a virtualenv in .venv with the package and its dev tools,
# and ZooKeeper (Debian's package) for the real-component tests.  Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.storm_py-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e ".[dev]"
    touch "$stamp"
fi
if [ "${1:-}" = "--with-zookeeper" ] && [ ! -f /usr/share/java/zookeeper.jar ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq zookeeper >/dev/null
    else
        echo "bootstrap: ZooKeeper is missing and apt-get is not available; install ZooKeeper 3.8+ by hand" >&2
        exit 1
    fi
fi
