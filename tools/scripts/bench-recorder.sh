#!/usr/bin/env bash
# What the flight recorder costs (lesson 14): AllReduce of 8 B and 1 MiB over 2 processes, with the
# recorder on (the default, 2000 entries) and off (BATON_FLIGHT_RECORDER=0), the two runs of each
# repeat back to back (the order alternating), so a pair shares the VM's speed of the moment.
# Prints each pair's out-of-place times and their ratio, then per size the median ratio and the
# median times (at 8 B the VM's two placements differ tenfold: a pair split across them says nothing).
#
#   tools/scripts/bench-recorder.sh [REPEATS]      (default 5; an otherwise idle machine)
set -euo pipefail
BIN=${BIN:-build/bin}
REPEATS=${1:-5}
declare -A ratios ons offs
run() {  # recorder-entries size iterations -> the out-of-place time (us)
  env BATON_FLIGHT_RECORDER=$1 "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b "$2" -e "$2" \
    -n "$3" -w 200 -c 0 | awk -v s="$2" '$1 == s {print $6; exit}'
}
for ((r = 1; r <= REPEATS; r++)); do
  for size in 8 1048576; do
    iters=100000
    ((size > 8)) && iters=500
    if ((r % 2)); then on=$(run 2000 $size $iters) off=$(run 0 $size $iters)
    else off=$(run 0 $size $iters) on=$(run 2000 $size $iters); fi
    ratio=$(awk -v a="$on" -v b="$off" 'BEGIN{printf "%.3f", a/b}')
    ratios[$size]+="$ratio " ons[$size]+="$on " offs[$size]+="$off "
    printf "repeat %d  %8s B  on %8s us  off %8s us  on/off %s\n" "$r" "$size" "$on" "$off" "$ratio"
  done
done
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
for size in 8 1048576; do
  echo "$size B over $REPEATS repeats: median on/off $(median "${ratios[$size]}"); median time on" \
    "$(median "${ons[$size]}") us, off $(median "${offs[$size]}") us"
done
