#!/usr/bin/env bash
# Installs what storm_py needs on a fresh machine and prints each thing it installs, one line each:
#   - a virtualenv in .venv with the package and its extras: dev (tests, linters, the dev Kafka broker), kafka, spark, redis, jdbc, vector (pandas, polars), async (uvloop), elastic (fsspec), ops (py-spy, OpenTelemetry);
#   - with --with-services, Debian's packages for the real components the tests start: ZooKeeper, a Java
#     runtime (ZooKeeper, PySpark), Chromium and its driver (UI tests), a compose client (checks
#     docker-compose.yml without a Docker engine), gcc (the compiled build's test run), redis-server (the Redis
#     state provider's and Trident's RedisMapState tests, storm-py dev-redis), Prometheus's promtool (checks and
#     tests the alert rules under deploy/prometheus), podman, runc and debootstrap (tests/deploy runs
#     docker-compose.yml's cluster and the Kubernetes manifests in containers, on base images made from Debian
#     where no image registry answers), PostgreSQL (storm_py.jdbc's tests).
# Safe to run again: it skips what is there (and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS="dev,kafka,spark,redis,jdbc,vector,async,elastic,ops"
say() { echo "bootstrap: $*"; }

if [ ! -x .venv/bin/python ]; then
    say "virtualenv .venv (created with $("$PY" --version 2>&1))"
    "$PY" -m venv .venv
fi
stamp=.venv/.storm_py-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ]; then
    # one line per Python package: the project itself, then every requirement of it and of its extras
    say "python package storm_py (editable, extras: $EXTRAS)"
    .venv/bin/python - "$EXTRAS" <<'PYEOF'
import configparser, sys
cfg = configparser.ConfigParser()
cfg.read("setup.cfg")
reqs = [r.strip() for r in cfg["options"]["install_requires"].splitlines() if r.strip()]
for extra in sys.argv[1].split(","):
    reqs += [r.strip() for r in cfg["options.extras_require"].get(extra, "").splitlines() if r.strip()]
for req in reqs:
    print(f"bootstrap: python package {req}")
PYEOF
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
    touch "$stamp"
else
    say "python packages: .venv is up to date with setup.cfg"
fi

if [ "${1:-}" = "--with-services" ]; then
    # Debian package -> the file or command that shows it is there
    missing=""
    check() {
        if [ -e "$2" ] || command -v "$2" >/dev/null 2>&1; then
            say "service $1: present"
        else
            say "service $1: installing (Debian package $1)"
            missing="$missing $1"
        fi
    }
    check zookeeper /usr/share/java/zookeeper.jar
    check default-jre-headless java
    check chromium /usr/bin/chromium
    check chromium-driver /usr/bin/chromedriver
    check postgresql /usr/lib/postgresql  # storm_py.jdbc's tests start a PostgreSQL server (initdb into a temp dir)
    check redis-server redis-server  # the Redis state provider's and RedisMapState's tests, storm-py dev-redis
    check nodejs node  # runs the Node.js multilang components of tests/multilang
    check gcc gcc  # compiles the hot modules for STORM_PY_BUILD=compiled (the suite's second run in CI)
    check prometheus promtool  # promtool checks and unit-tests the alert rules under deploy/prometheus
    check podman podman  # tests/deploy: the compose cluster and the Kubernetes manifests, where no Docker daemon runs
    check runc /usr/sbin/runc  # the OCI runtime tests/deploy/containers.py gives podman
    check debootstrap debootstrap  # scripts/local-images.sh: base images from Debian where no registry answers
    if command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1; then
        say "service docker-compose: present"
    else
        say "service docker-compose: installing (Debian package docker-compose)"
        missing="$missing docker-compose"
    fi
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
