#!/bin/bash
# bench/service-restart.sh DBNAME
#
# Restarts the pg_warp service of the cluster that PGHOST/PGPORT name, and
# nothing else: the service gets SIGTERM, and its supervisor starts a new
# one (doc/service.md, "Starting and stopping").  So the GPU column cache
# and the inner tables the service keeps are emptied while PostgreSQL's
# shared buffers, and the page cache, stay as they are (a cluster restart
# empties the shared buffers too).  Waits until a service other than the
# old one answers (at most 30 s).  Runs on the cluster's host, as a user
# that may signal the service; needs the pg_warp extension in DBNAME.
set -eu
db=${1:?database}
q() { psql -d "$db" -XAtqc "$1" 2>/dev/null || true; }
old=$(q "SELECT pid FROM pgwarp.service_status()")
[ -n "$old" ] || { echo "service-restart: no service answers in $db" >&2; exit 1; }
kill -TERM "$old"
for _ in $(seq 300); do
    new=$(q "SELECT pid FROM pgwarp.service_status() WHERE engine <> 'none'")
    if [ -n "$new" ] && [ "$new" != "$old" ]; then
        exit 0
    fi
    sleep 0.1
done
echo "service-restart: no new service after 30 s (the old one was pid $old)" >&2
exit 1
