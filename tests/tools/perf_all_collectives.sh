#!/usr/bin/env bash
# baton-perf on every collective, as threads (-t 3) and as processes (baton-run -n 3), every
# datatype and op, with -c 1: any wrong element makes baton-perf (and this script) fail.
set -euo pipefail
BIN=${1:-build/bin}
for coll in allreduce reducescatter reduce broadcast allgather alltoall sendrecv gather scatter; do
  echo "== $coll, 3 threads"
  "$BIN/baton-perf" "$coll" -t 3 -d all -o all -b 1K -e 1M -f 32 -n 1 -w 1 -c 1 -r 1
  echo "== $coll, 3 processes"
  "$BIN/baton-run" -n 3 "$BIN/baton-perf" "$coll" -b 8 -e 4M -f 8 -n 1 -w 1 -c 1 -r 2
done
# nccl-tests' hypercube (recursive-doubling allgather over send/recv) needs a power of two.
echo "== hypercube, 4 threads"
"$BIN/baton-perf" hypercube -t 4 -d all -b 1K -e 1M -f 32 -n 1 -w 1 -c 1
echo "== hypercube, 4 processes"
"$BIN/baton-run" -n 4 "$BIN/baton-perf" hypercube -b 8 -e 4M -f 8 -n 1 -w 1 -c 1
