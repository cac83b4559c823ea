#!/usr/bin/env bash
# baton-perf on every collective, as threads (-t 3) and as processes (baton-run -n 3), every
# datatype and op, with -c 1: any wrong element makes baton-perf (and this script) fail. Then the
# fused operations (baton-perf ag_gemm ...), every stage checked against the first.
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
# baton-perf --help names its other modes, so a reader of the help finds them.
help=$("$BIN/baton-perf" --help)
for mode in ag_gemm gemm_rs moe; do grep -q "$mode" <<<"$help" || { echo "FAIL: baton-perf --help does not name $mode"; exit 1; }; done
# The fused operations' mode (lesson 11): every stage against the first, bit for bit (the "wrong"
# column and the exit status), each datatype, as threads and as processes.
for op in ag_gemm gemm_rs ag_gemm_bwd gemm_rs_bwd; do
  echo "== $op, 3 threads"
  for d in float half bfloat16; do
    "$BIN/baton-perf" "$op" -t 3 -d $d -M 3,51,390 -N 40 -K 70 -n 1 -w 1 -r 1 -c 1
  done
  echo "== $op, 2 processes"
  "$BIN/baton-run" -n 2 "$BIN/baton-perf" "$op" -M 64,260 -N 40 -K 70 -n 1 -w 1 -r 1 -c 1
done
