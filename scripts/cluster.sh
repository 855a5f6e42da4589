#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for pg_warp, in a temporary directory owned by
# an unprivileged OS user (PostgreSQL refuses to run as root).
#
#   scripts/cluster.sh start [DIR]   initdb (if new) + start; prints the variables to export
#   scripts/cluster.sh stop  [DIR]   stop the server (the directory stays)
#   scripts/cluster.sh destroy [DIR] stop and remove the directory
#
# DIR defaults to $PG_WARP_CLUSTER or /tmp/pg_warp_cluster.  PGPORT (default 5433)
# picks the port.  PG_WARP_PRELOAD=0 leaves pg_warp out of shared_preload_libraries;
# PG_WARP_TEST_CLUSTER=1 (scripts/test.sh) sets pg_warp.enable_gpupreagg_heap = on.  The server listens on 127.0.0.1 and on a socket in DIR.
# Source the output of 'start' (eval "$(scripts/cluster.sh start)") to point
# psql, pg_regress and the tests at it.
set -euo pipefail

cmd=${1:-}
dir=${2:-${PG_WARP_CLUSTER:-/tmp/pg_warp_cluster}}
port=${PGPORT:-5433}
pgbin=${PG_WARP_PGBIN:-$(pg_config --bindir)}
osuser=${PG_WARP_OSUSER:-pgwarp}
if [ "${PG_WARP_PRELOAD:-1}" = 0 ]; then preload=''; else preload='pg_warp'; fi

# run a command as the cluster's OS user (ourselves unless we are root)
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$osuser" -- "$@"
    else
        "$@"
    fi
}

case "$cmd" in
start)
    if [ "$(id -u)" -eq 0 ] && ! id "$osuser" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$osuser"
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        mkdir -p "$dir"
        [ "$(id -u)" -eq 0 ] && chown "$osuser" "$dir"
        chmod 755 "$dir"
        as_owner "$pgbin/initdb" -D "$dir/data" -U postgres --auth=trust \
            --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
            || { cat "$dir/initdb.log" >&2; exit 1; }
        cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_preload_libraries = '$preload'
max_worker_processes = 16
max_parallel_workers = 8
max_parallel_workers_per_gather = 4
fsync = off
log_min_messages = warning
CONF
        # scripts/test.sh's clusters run GpuPreAgg over heap tables on the CPU
        # engine too (the default, auto: only where the run goes to a GPU)
        if [ "${PG_WARP_TEST_CLUSTER:-0}" = 1 ]; then
            echo "pg_warp.enable_gpupreagg_heap = on" >>"$dir/data/postgresql.conf"
        fi
    fi
    as_owner "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null \
        || { tail -20 "$dir/server.log" >&2; exit 1; }
    echo "export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres"
    ;;
stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    ;;
destroy)
    "$0" stop "$dir"
    rm -rf "$dir"
    ;;
*)
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
