#!/bin/bash
# bench/cpu_engine_bench_scaling.sh FILE [QUERIES] [THREADS] [MAPS] [REPEAT]
#
# Where the CPU engine's per-row cost goes when threads are added (issue 28
# item 6: Q4, two text keys, cost ~58 ns/row per thread at 16 threads on the
# H200 host against ~11 ns/row on one thread): bench/cpu_engine_bench over
# lineorder FILE (an Arrow file, e.g. bench/ssb/load.sh's), for every query
# of QUERIES (default "q1 q4": q1 has no text and no grouping, so it tells
# the engine's own scaling from that of the text keys' table), every thread
# count of THREADS (default "1 2 4 8 16") and every read mode of MAPS
# (default "0 1 2"):
#
#   MAP=0  batches read with pread into the engine's buffers (load timed apart)
#   MAP=1  the file mapped once, read in place (the mapping's first touch of
#          each page only in the first repetition)
#   MAP=2  mapped anew every repetition, as the service maps a file every run
#          (src/service/file_map.c): every repetition's first touch of each
#          page faults in the engine threads
#
# Each line: query, threads, map, the engine's CPU ns/row (all threads'
# CPU time over the rows: flat when the engine scales), its wall ns/row per
# thread, and the load's ns/row, the best of REPEAT (default 5) runs; the
# kernel's page faults of the run (/usr/bin/time) beside it.  Reading: if
# MAP=0's engine CPU ns/row stays flat as threads grow while MAP=2's grows,
# the mapping's page faults (their lock and the unmapping's TLB shootdowns)
# are the gap; if MAP=0's grows too, it is the engine's memory traffic (the
# threads share L3 and memory bandwidth); if q1 scales and q4 does not, it
# is the text keys' table.
#
#   make -C bench cpu_engine_bench && bench/cpu_engine_bench_scaling.sh /path/lineorder.arrow
set -euo pipefail
file=${1:?usage: $0 FILE [QUERIES] [THREADS] [MAPS] [REPEAT]}
queries=${2:-q1 q4}
threads=${3:-1 2 4 8 16}
maps=${4:-0 1 2}
repeat=${5:-5}
bench=$(dirname "$0")/cpu_engine_bench
ncpu=$(nproc)
timer=(/usr/bin/time -f 'faults %R')
[ -x /usr/bin/time ] || timer=()
printf '%-4s %7s %3s %16s %17s %12s %12s\n' query threads map "engine CPU ns/row" "engine wall ns/row" "load ns/row" "page faults"
for q in $queries; do
    for t in $threads; do
        [ "$t" -le "$ncpu" ] || continue
        for m in $maps; do
            best=""
            for r in $(seq "$repeat"); do
                out=$(MAP=$m THREADS=$t "${timer[@]}" taskset -c 0-$((t - 1)) \
                      "$bench" "$file" "$q" 2 2>&1)
                line=$(echo "$out" | grep "^$q:")
                cpu=$(echo "$line" | sed -E 's/.*engine CPU [0-9.]+ s \(([0-9.]+) ns\/row\).*/\1/')
                wall=$(echo "$line" | sed -E 's/.*engine [0-9.]+ s wall \(([0-9.]+) ns\/row\).*/\1/')
                load=$(echo "$line" | sed -E 's/.*load [0-9.]+ s \(([0-9.]+) ns\/row\).*/\1/')
                faults=$(echo "$out" | sed -n 's/^faults //p')
                faults=${faults:--}
                if [ -z "$best" ] || awk "BEGIN{exit !($cpu < ${best%% *})}"; then
                    best="$cpu $wall $load $faults"
                fi
            done
            read -r cpu wall load faults <<< "$best"
            printf '%-4s %7s %3s %16s %17s %12s %12s\n' "$q" "$t" "$m" "$cpu" "$wall" "$load" "$faults"
        done
    done
done
