#!/bin/bash
# device call 1: setup, SF 20 load in the background, the GPU suites
b=dist/pg_warp-bundle-0.1.0-x86_64.tar.gz
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
SKIP_TESTS=1 SKIP_LOAD=1 bench/gpu-host.sh setup $b > $OUT/setup.log 2>&1; echo "setup rc=$?"
rm -f /tmp/load.done
( SF=20 bench/gpu-host.sh load > $OUT/load.log 2>&1; echo "rc=$?" > /tmp/load.done ) &
bd=$(ls -d /tmp/pg_warp_gpu_host/pg_warp-bundle-*/)
PYTEST_ADDOPTS="-k 'gpujoin or service_join or test_gpupreagg.py or service_agg or test_gpuscan.py'" \
  PG_WARP_LOG_DIR=$OUT/test-logs timeout 420 env -u PGPORT $bd/run-tests.sh > $OUT/tests.log 2>&1
echo "tests rc=$?"
grep -E "passed|failed|FAILED|not ok|^ok .*join|joincheck|xpu_join" $OUT/tests.log | tail -25
for i in $(seq 1 60); do [ -f /tmp/load.done ] && break; sleep 2; done
cat /tmp/load.done 2>/dev/null; tail -4 $OUT/load.log
