#!/bin/sh
# Fuzzes the Arrow reader (test/fuzz/fuzz_reader.c) with libFuzzer under
# AddressSanitizer and UndefinedBehaviorSanitizer: first replays every input of
# the seed corpus in test/fuzz/corpus one by one, then fuzzes for the given
# number of seconds (default 60; 0 replays only), one job, starting from that
# corpus.  Everything it writes stays in test/fuzz/work (ignored by git): the
# binary, the growing corpus, the log and any crash inputs.  scripts/test.sh
# (CI) runs it for 60 seconds.
#
#   scripts/fuzz.sh [SECONDS]
#
# Exit status 0 when no crash was found; 1 (with the crash files listed) else.
# A slow unit counts as a crash when it is still slow run again alone.
set -eu

SECONDS_TO_RUN=${1:-60}
TOP=$(cd "$(dirname "$0")/.." && pwd)
WORK=$TOP/test/fuzz/work
CC=${FUZZ_CC:-$(command -v clang || command -v clang-14)}

mkdir -p "$WORK/corpus" "$WORK/artifacts"
"$CC" -std=gnu11 -g -O1 -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I"$TOP/src/arrow" -o "$WORK/fuzz_reader" \
	"$TOP/test/fuzz/fuzz_reader.c" "$TOP"/src/arrow/*.c -llz4 -lzstd -lm

# the seed corpus, each input once (a crash stops here with the input named)
n_seeds=$(find "$TOP/test/fuzz/corpus" -type f | wc -l)
if ! "$WORK/fuzz_reader" -runs=1 "$TOP"/test/fuzz/corpus/* >"$WORK/replay.log" 2>&1; then
	tail -n 30 "$WORK/replay.log"
	echo "replay of the seed corpus failed"
	exit 1
fi
echo "replayed $n_seeds seed inputs: no crash"
[ "$SECONDS_TO_RUN" -gt 0 ] || exit 0

# -jobs=1 runs one worker (logging to fuzz-0.log) and leaves the other cores
# to the rest of the machine.
cd "$WORK"
rm -f "$WORK/fuzz-0.log"
status=0
./fuzz_reader -max_total_time="$SECONDS_TO_RUN" -jobs=1 -workers=1 \
	-print_final_stats=1 -artifact_prefix="$WORK/artifacts/" \
	"$WORK/corpus" "$TOP/test/fuzz/corpus" >/dev/null 2>&1 || status=$?

log=$WORK/fuzz-0.log
if [ -f "$log" ]; then
	grep -E '^(stat::|#[0-9]+ +DONE)' "$log" || true
	grep -E 'cov: ' "$log" | tail -n 1 || true
fi
# A slow unit (libFuzzer's -report_slow_units: an input that took 10 s or
# more) is run again alone: one that is still slow (SLOW_MS or more) fails
# like a crash; one that runs at once was slow only because the machine
# stalled (CI fuzzes beside the fatbin's build on two cores: a 3 kB input
# that runs in 2 ms alone once took 10 s there), which is said, not counted.
SLOW_MS=1000
for f in "$WORK"/artifacts/slow-unit-*; do
	[ -f "$f" ] || continue
	ms=$(./fuzz_reader -runs=1 "$f" 2>&1 | sed -n 's/^Executed .* in \([0-9]*\) ms$/\1/p')
	if [ -n "$ms" ] && [ "$ms" -lt "$SLOW_MS" ]; then
		echo "slow unit $(basename "$f"): ${ms} ms when run again alone, a stall of the machine; not counted"
		rm -f "$f"
	fi
done
crashes=$(find "$WORK/artifacts" -type f | sort)
if [ -n "$crashes" ]; then
	echo "crash inputs:"
	echo "$crashes"
	exit 1
fi
if [ "$status" -ne 0 ]; then
	echo "fuzzer exited with status $status (see $log)"
	exit 1
fi
echo "no crashes"
