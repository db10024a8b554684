#!/usr/bin/env bash
# Base images for docker-compose.yml made from Debian, for a site whose engine reaches no image registry:
#   - a Python 3.11 base (Debian bookworm's python3 in a virtualenv at /opt/python, pip on the PATH, gcc and
#     the Python headers for the compiled build, tini) standing in for python:3.11 and python:3.11-slim;
#   - a ZooKeeper 3.8 image (Debian's zookeeper package on that base) standing in for zookeeper:3.8.
# The base comes from `debootstrap --variant=minbase`, imported with `<engine> import`; it trusts the host's
# extra certificate authorities (/usr/local/share/ca-certificates), so that pip and apt inside builds get through
# a proxy the host trusts.  Each image's tag ends with a hash of its inputs: an image whose inputs did not change
# is reused, not rebuilt; older ones of this script are removed.
# Prints the variables docker-compose.yml reads, ready for `eval` or an env file:
#   eval "$(./scripts/local-images.sh)" && docker compose up -d --build
# Needs root (debootstrap) and an engine: $CONTAINER_ENGINE, else podman, else docker.
# Debian's mirror: $DEBIAN_MIRROR, else the first one apt uses here, else deb.debian.org.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${CONTAINER_ENGINE:-$(command -v podman || command -v docker || true)}
if [ -z "$engine" ]; then echo "local-images: neither podman nor docker is installed" >&2; exit 2; fi
if ! command -v debootstrap >/dev/null 2>&1; then
    echo "local-images: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 2
fi
say() { echo "local-images: $*" >&2; }
mirror=${DEBIAN_MIRROR:-$(grep -hoE '^(deb|URIs:) +(\[[^]]*\] +)?https?://[^ ]+/debian/?( |$)' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -oE 'https?://[^ ]+' | head -n1 || true)}
mirror=${mirror:-http://deb.debian.org/debian}
packages="python3,python3-venv,python3-dev,gcc,libc6-dev,ca-certificates,tini"

# the inputs of each image, hashed: the recipe (bump its version when the steps below change), the host's extra
# authorities, the ZooKeeper image's files
recipe="1 bookworm minbase $packages venv:/opt/python"
certs=$(find /usr/local/share/ca-certificates -type f -name '*.crt' 2>/dev/null | sort || true)
base_hash=$( { echo "$recipe"; for c in $certs; do cat "$c"; done; } | sha256sum | cut -c1-12)
zk_hash=$( { echo "$base_hash"; cat conf/docker/zookeeper/*; } | sha256sum | cut -c1-12)
base="localhost/storm-py-base:bookworm-$base_hash"
zookeeper="localhost/storm-py-zookeeper:3.8-$zk_hash"

exists() { "$engine" image inspect "$1" >/dev/null 2>&1; }
drop_stale() {  # the other tags of repository $1 (made by earlier versions of this script)
    "$engine" images --format '{{.Repository}}:{{.Tag}}' | { grep "^$1:" || true; } | { grep -vx "$2" || true; } \
        | while read -r old; do say "removing stale $old"; "$engine" rmi "$old" >/dev/null || true; done
}

if exists "$base"; then
    say "$base: present"
else
    start=$(date +%s)
    root=$(mktemp -d /tmp/storm-py-rootfs.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    say "$base: debootstrap bookworm from $mirror"
    debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$root.log" 2>&1 \
        || { tail -n 20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
    rm -f "$root.log"
    for c in $certs; do cp "$c" "$root/usr/local/share/ca-certificates/"; done
    inside() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
    inside update-ca-certificates >/dev/null 2>&1
    inside python3 -m venv /opt/python
    inside apt-get clean
    rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/tmp/*
    tar -C "$root" -c . | "$engine" import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
        --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
        --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
    rm -rf "$root"
    trap - EXIT
    say "$base: made in $(( $(date +%s) - start )) s"
fi
drop_stale localhost/storm-py-base "$base"

if exists "$zookeeper"; then
    say "$zookeeper: present"
else
    start=$(date +%s)
    "$engine" build -q --build-arg "BASE=$base" -t "$zookeeper" conf/docker/zookeeper >/dev/null \
        || { say "$zookeeper: the build failed"; exit 1; }
    say "$zookeeper: built in $(( $(date +%s) - start )) s"
fi
drop_stale localhost/storm-py-zookeeper "$zookeeper"

echo "STORM_PY_BUILD_BASE_IMAGE=$base"
echo "STORM_PY_BASE_IMAGE=$base"
echo "STORM_PY_ZOOKEEPER_IMAGE=$zookeeper"
