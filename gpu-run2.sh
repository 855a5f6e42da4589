#!/bin/bash
# device call 2: the SSB benchmark (needs call 1's cluster and data)
for i in $(seq 1 100); do [ -f /tmp/load.done ] && break; sleep 3; done
cat /tmp/load.done; tail -2 $OUT/load.log 2>/dev/null
SF=20 RUNS=3 WHEELS=$PWD/dist/wheels OUT=$OUT timeout 570 bench/gpu-host.sh ssb-engine > $OUT/ssb-engine.log 2>&1
echo "bench rc=$?"
tail -60 $OUT/ssb-engine.log
