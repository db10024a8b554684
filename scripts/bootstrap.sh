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
# --with-services: the real components the test suite runs against (ZooKeeper) and the compose client that
# validates docker-compose.yml; both from Debian's packages.
if [ "${1:-}" = "--with-services" ]; then
    missing=""
    [ -f /usr/share/java/zookeeper.jar ] || missing="$missing zookeeper"
    command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || missing="$missing docker-compose"
    if [ -n "$missing" ]; then
        if command -v apt-get >/dev/null 2>&1; then
            SUDO=""
            [ "$(id -u)" -ne 0 ] && SUDO="sudo"
            $SUDO apt-get update -qq
            # shellcheck disable=SC2086
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
        else
            echo "bootstrap: missing$missing and apt-get is not available; install them by hand" >&2
            exit 1
        fi
    fi
fi
