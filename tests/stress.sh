#!/usr/bin/env bash
# Long runs kept out of `make test`: jitter mode (random sleeps before every flag store), repeated
# 8-rank sweeps on 2 cores, and repeated process runs. Exits non-zero on the first failure.
set -euo pipefail
BUILD=${BATON_BUILD:-build}
TESTDIR=${TESTDIR:-$BUILD/tests}
BIN=$BUILD/bin
echo "== jitter: quick collective suite x3"
for i in 1 2 3; do BATON_JITTER=1 "$TESTDIR/collective_tests" --gtest_filter='Protocol*:Threads*Quick*' >/dev/null; done
echo "== jitter: 4 processes"
BATON_JITTER=1 "$BIN/baton-run" -n 4 "$BIN/baton-perf" allreduce -b 8 -e 8M -f 4 -n 5 -c 1 >/dev/null
echo "== 8 ranks as threads, all collectives, x3"
for i in 1 2 3; do
  for coll in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
    "$BIN/baton-perf" "$coll" -t 8 -b 8 -e 16M -f 4 -n 3 -c 1 >/dev/null
  done
done
echo "== 4 processes x 2 threads, every type and op"
"$BIN/baton-run" -n 4 "$BIN/baton-perf" allreduce -t 2 -d all -o all -b 1K -e 4M -f 16 -n 2 -c 1 >/dev/null
echo "stress: all passed"
