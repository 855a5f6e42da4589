#!/usr/bin/env bash
# Installs what building and testing pg_warp needs on Debian 12 (as root):
# PostgreSQL 15 server and headers, liblz4/libzstd, a C toolchain, and the
# Python packages of the test suites.  Safe to run again; quiet when all is there.
set -euo pipefail

DEBS=(build-essential clang-14 llvm-14 postgresql-15 postgresql-server-dev-15 libpq-dev
      liblz4-dev libzstd-dev libmsgpack-dev zlib1g-dev libssl-dev python3 python3-pip
      libipc-run-perl postgresql-15-hll)
PYPKGS=(pyarrow pytest duckdb polars numpy msgpack fluent-logger)

missing=()
for p in "${DEBS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup-deps: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
        exit 1
    fi
    echo "setup-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

pymissing=()
for p in "${PYPKGS[@]}"; do
    mod=$p
    [ "$p" = fluent-logger ] && mod=fluent.sender    # its module's name
    python3 -c "import $mod" 2>/dev/null || pymissing+=("$p")
done
if [ ${#pymissing[@]} -gt 0 ]; then
    echo "setup-deps: installing Python packages ${pymissing[*]}"
    # Debian's own python3 is "externally managed"; pyenv or venv pythons are not
    python3 -m pip install -q "${pymissing[@]}" 2>/dev/null \
        || python3 -m pip install -q --break-system-packages "${pymissing[@]}"
fi
