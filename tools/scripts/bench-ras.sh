#!/usr/bin/env bash
# What NCCL's RAS service costs a running job (lesson 14, docs/fault-tolerance.md): 8 processes run
# AllReduces of 4096 int32 back to back (tests/process/ras_worker); in each repeat the job's
# AllReduce rate is measured for PHASE seconds without queries, PHASE seconds under queries
# (baton-ras -f json, QPS a second, or back to back with QPS=0), and PHASE seconds without again. Counts come from the
# service's own JSON, so the quiet phases hold two queries each (one at each end). Prints each
# phase's rate, the ratio queried / mean of the quiet ones, and the queries' answer times.
#
#   tools/scripts/bench-ras.sh [REPEATS=3] [PHASE=3] [QPS=10]      after make tools tests
set -uo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-3}
PHASE=${2:-3}
QPS=${3:-10}
worker=build/tests/ras_worker
ras=build/bin/baton-ras
client=tests/fault/ras_protocol_client.py
for f in "$worker" "$ras"; do [[ -x $f ]] || { echo "bench-ras: $f is missing (make tools tests)"; exit 1; }; done
work=$(mktemp -d)
trap 'touch "$work/stop"; sleep 1; pkill -9 -f "tag $work" 2>/dev/null; rm -rf "$work"' EXIT
rasport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
port=$((20000 + RANDOM % 12000))
n=8
for ((r = 0; r < n; r++)); do
  NCCL_COMM_ID=127.0.0.1:$port BATON_RANK=$r BATON_NRANKS=$n NCCL_RAS_ADDR=127.0.0.1:$rasport \
    "$worker" --stop "$work/stop" --seconds 600 --pause-us 0 --tag "$work" >"$work/out.$r" 2>&1 &
done
for ((i = 0; i < 300; i++)); do
  [[ $(cat "$work"/out.* 2>/dev/null | grep -c running) == "$n" ]] && break
  sleep 0.1
done
count() { python3 "$client" 127.0.0.1 "$rasport" 5 | sed -n 's/.*allreduce=\([0-9]*\)-.*/\1/p'; }
now() { date +%s%N; }
echo "# $n processes, AllReduce 4096 int32 back to back; $(nproc) cores; phases of $PHASE s; queries: $( ((QPS > 0)) && echo "$QPS a second" || echo "back to back")"
printf "%7s %12s %12s %12s %8s %10s %12s\n" repeat quiet/s queried/s quiet/s ratio queries answer_ms
for ((k = 1; k <= REPEATS; k++)); do
  rates=()
  for phase in quiet queried quiet; do
    c0=$(count) t0=$(now) q=0
    if [[ $phase == queried ]]; then
      ms=0
      while (($(now) - t0 < PHASE * 1000000000)); do
        a=$(now)
        "$ras" -f json >/dev/null 2>&1
        ms=$((ms + ($(now) - a) / 1000)) q=$((q + 1))
        ((QPS > 0)) && sleep "$(awk -v q=$QPS 'BEGIN { print 1 / q }')"
      done
      answer=$(awk -v us=$ms -v q=$q 'BEGIN { printf "%.2f", us / q / 1000 }')
      queries=$q
    else
      sleep "$PHASE"
    fi
    c1=$(count) t1=$(now)
    rates+=("$(awk -v c=$((c1 - c0)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", c / (ns / 1e9) }')")
  done
  ratio=$(awk -v a="${rates[0]}" -v b="${rates[1]}" -v c="${rates[2]}" 'BEGIN { printf "%.3f", b / ((a + c) / 2) }')
  printf "%7d %12s %12s %12s %8s %10s %12s\n" "$k" "${rates[0]}" "${rates[1]}" "${rates[2]}" "$ratio" "$queries" "$answer"
done
