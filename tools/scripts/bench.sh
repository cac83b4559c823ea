#!/usr/bin/env bash
# docs/perf.md's measurements, in one run: the allreduce sweep over 2 processes (8 B .. 256 MiB),
# beside the single-thread memcpy bandwidth that baton-perf measures in the same run, then an
# 8-rank (threads) sweep to 16 MiB with its wall time. Run it on an otherwise idle machine.
set -euo pipefail
BIN=${BIN:-build/bin}
OUT=${1:-build/bench}
mkdir -p "$OUT"
echo "== baton-run -n 2 baton-perf allreduce -b 8 -e 256M -f 2"
"$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 256M -f 2 | tee "$OUT/allreduce-2proc.txt"
memcpy=$(grep -oE 'memcpy bandwidth: [0-9.]+' "$OUT/allreduce-2proc.txt" | grep -oE '[0-9.]+$')
big=$(awk '$1 == 268435456 {print $8}' "$OUT/allreduce-2proc.txt")
if [[ -n "$memcpy" && -n "$big" ]]; then
  echo "busbw at 256 MiB: $big GB/s = $(awk -v b="$big" -v m="$memcpy" 'BEGIN{printf "%.2f", b/m}') x single-thread memcpy ($memcpy GB/s)"
fi
echo "== baton-perf allreduce -t 8 -b 8 -e 16M -f 2 (8 ranks as threads on $(nproc) cores)"
start=$(date +%s.%N)
"$BIN/baton-perf" allreduce -t 8 -b 8 -e 16M -f 2 | tee "$OUT/allreduce-8threads.txt"
echo "8-rank sweep wall time: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e-s}') s"
