#!/usr/bin/env bash
# Loads the Star Schema Benchmark into a PostgreSQL database and, when pg2arrow
# is on the PATH, exports every table to an Arrow file.
#
#   bench/ssb/load.sh [-d DB] [-s SF] [-j JOBS] [-a DIR] [options]
#
# Steps: (re)create the five tables (schema.sql); run ssbgen in JOBS chunks, each
# piped into its own COPY ... FROM STDIN session, with the dimension tables
# loading beside them; add primary keys (keys.sql); VACUUM (FREEZE, ANALYZE);
# then, with pg2arrow, write DIR/TABLE.arrow for each table.  Every step prints
# its time.  Connection settings come from the PG* environment variables
# (PGHOST, PGPORT, PGUSER, ...) and -d.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() {
    cat <<EOF
Usage: $0 [OPTION]...
Loads the Star Schema Benchmark into PostgreSQL (tables lineorder, customer,
supplier, part, date1), then exports them to Arrow files with pg2arrow.

  -d DB            database (default: \$PGDATABASE, else libpq's default)
  -s SF            scale factor (default 1; fractional allowed, e.g. 0.01)
  -j JOBS          parallel COPY sessions for lineorder (default: CPU count)
  -a DIR           Arrow output directory (default: bench/data/ssb-sfSF)
  --no-arrow       skip the Arrow export
  --no-vacuum      ANALYZE only, instead of VACUUM (FREEZE, ANALYZE)
  --lineorder-pk   also build lineorder's primary key (slow; no SSB query uses it)
  -p, --progress   let ssbgen report rows and rate on standard error
  -h, --help       show this help
Environment: SSBGEN (generator binary; default: bench/ssb/ssbgen, built with
make), PG2ARROW (pg2arrow binary; default: pg2arrow on the PATH).
EOF
}

db=${PGDATABASE:-}
sf=1
jobs=$(nproc 2>/dev/null || echo 2)
arrow_dir=
do_arrow=1
vacuum=1
lineorder_pk=0
progress=()

while [ $# -gt 0 ]; do
    case "$1" in
        -d) db=$2; shift 2 ;;
        -s) sf=$2; shift 2 ;;
        -j) jobs=$2; shift 2 ;;
        -a) arrow_dir=$2; shift 2 ;;
        --no-arrow) do_arrow=0; shift ;;
        --no-vacuum) vacuum=0; shift ;;
        --lineorder-pk) lineorder_pk=1; shift ;;
        -p|--progress) progress=(--progress); shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$0: unknown argument \"$1\" (try --help)" >&2; exit 2 ;;
    esac
done
case "$jobs" in ''|*[!0-9]*|0) echo "$0: -j wants a positive integer" >&2; exit 2 ;; esac
[ -n "$arrow_dir" ] || arrow_dir=$root/bench/data/ssb-sf$sf

if [ -n "${SSBGEN:-}" ]; then
    ssbgen=$SSBGEN
else
    make -s -C "$here"
    ssbgen=$here/ssbgen
fi
# rejects a bad scale factor (or a broken ssbgen) before anything is touched
"$ssbgen" -s "$sf" -T date --count >/dev/null || { echo "$0: $ssbgen -s $sf failed" >&2; exit 1; }

db_args=()
[ -n "$db" ] && db_args=(-d "$db")
psql_cmd=(psql -X -q -v ON_ERROR_STOP=1 "${db_args[@]}")
copy_cmd=(psql -X -v ON_ERROR_STOP=1 "${db_args[@]}")   # not quiet: prints "COPY n"

work=$(mktemp -d "${TMPDIR:-/tmp}/ssb_load.XXXXXX")
cleanup() {
    # stop unfinished pipelines (a subshell per pipeline, and its ssbgen and psql)
    local p
    for p in $(jobs -p); do
        kill "$p" $(pgrep -P "$p") 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '%s  %s\n' "$(date +%H:%M:%S)" "$*"; }

t_all=$(now)
log "SSB scale factor $sf into database ${db:-(default)}, $jobs lineorder sessions"

t=$(now)
"${psql_cmd[@]}" -f "$here/schema.sql"
log "tables created ($(since "$t") s)"

# copy_one NAME TABLE SSBGEN-ARGS...: one ssbgen | psql COPY pipeline; its row
# count goes to $work/NAME.rows, its exit status to $work/NAME.rc.
copy_one() {
    local name=$1 table=$2
    shift 2
    (
        set +e -o pipefail
        "$ssbgen" -s "$sf" "$@" "${progress[@]}" |
            "${copy_cmd[@]}" -c "COPY $table FROM STDIN" >"$work/$name.out"
        echo $? >"$work/$name.rc"
    ) &
}

t=$(now)
copy_one date date1 -T date
copy_one supplier supplier -T supplier
copy_one customer customer -T customer
copy_one part part -T part
for k in $(seq 1 "$jobs"); do
    if [ "$jobs" -gt 1 ]; then
        copy_one "lineorder.$k" lineorder -T lineorder -C "$jobs" -S "$k"
    else
        copy_one "lineorder.$k" lineorder -T lineorder
    fi
done
wait

failed=0
for f in "$work"/*.rc; do
    if [ "$(cat "$f")" != 0 ]; then
        echo "$0: loading $(basename "$f" .rc) failed" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] || exit 1

rows_of() {
    # psql prints "COPY n" for each COPY; $1 is a file name prefix
    awk '$1 == "COPY" { n += $2 } END { print n + 0 }' "$work/$1"*.out
}
lo_rows=$(rows_of lineorder.)
secs=$(since "$t")
log "loaded in $secs s: lineorder $lo_rows, customer $(rows_of customer)," \
    "supplier $(rows_of supplier), part $(rows_of part), date1 $(rows_of date) rows" \
    "($(awk -v n="$lo_rows" -v s="$secs" 'BEGIN { printf "%.0f", n / (s > 0 ? s : 1) }') lineorder rows/s)"

t=$(now)
if [ "$lineorder_pk" = 1 ]; then
    "${psql_cmd[@]}" -v lineorder_pk=1 -f "$here/keys.sql"
else
    "${psql_cmd[@]}" -f "$here/keys.sql"
fi
log "primary keys added ($(since "$t") s)"

# VACUUM FREEZE sets hint bits and the visibility map once, here, rather than
# in the first benchmark query; scans that read heap blocks directly depend on
# all-visible pages.  The tables are vacuumed in parallel sessions.
t=$(now)
if [ "$vacuum" = 1 ]; then what="VACUUM (FREEZE, ANALYZE)"; else what="ANALYZE"; fi
pids=()
for table in lineorder customer supplier part date1; do
    "${psql_cmd[@]}" -c "$what $table" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
# The sessions above hold snapshots of each other's ANALYZE, which can keep
# VACUUM from marking every block all-visible (measured at SF 20: date1 0 of
# its 37 pages, part 13778 of 14321); the dimensions are small: vacuum them
# once more, one at a time.  pg_warp keeps a join's inner table for later
# queries only over an all-visible table (doc/engine.md, GpuJoin).
if [ "$vacuum" = 1 ]; then
    for table in customer supplier part date1; do
        "${psql_cmd[@]}" -c "VACUUM (FREEZE) $table"
    done
fi
log "$what done ($(since "$t") s)"
size=$("${psql_cmd[@]}" -At -c "
    SELECT pg_size_pretty(sum(pg_total_relation_size(t::regclass)))
      FROM unnest(ARRAY['lineorder', 'customer', 'supplier', 'part', 'date1']) AS t")
log "tables and indexes take $size"

if [ "$do_arrow" = 0 ]; then
    log "Arrow export skipped (--no-arrow)"
else
    pg2arrow=${PG2ARROW:-$(command -v pg2arrow || true)}
    if [ -z "$pg2arrow" ]; then
        log "Arrow export skipped: pg2arrow is not on the PATH (build tools/pg2arrow and add it, or set PG2ARROW)"
    else
        mkdir -p "$arrow_dir"
        for table in lineorder customer supplier part date1; do
            t=$(now)
            "$pg2arrow" "${db_args[@]}" -t "$table" -o "$arrow_dir/$table.arrow" -n "$jobs"
            log "exported $table to $arrow_dir/$table.arrow" \
                "($(du -h "$arrow_dir/$table.arrow" | cut -f1), $(since "$t") s)"
        done
    fi
fi
log "all done in $(since "$t_all") s"
