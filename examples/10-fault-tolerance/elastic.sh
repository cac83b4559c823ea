#!/usr/bin/env bash
# Lesson 10's run of elastic.c: 4 processes train for 30 steps with all-or-nothing AllReduces
# (BATON_ATOMIC_COLLECTIVES=1) and a 2 s failure timeout (BATON_TIMEOUT=2). This script, acting as
# the launcher, SIGKILLs rank 2 after step 8; at step 20 a fifth process, started at the beginning
# and waiting for its ticket, joins with ncclCommGrow. Every rank checks its weights at the end.
#
#   examples/10-fault-tolerance/elastic.sh [BINDIR]        (BINDIR: build/bin)
set -uo pipefail
BIN=${1:-build/bin}
EX=$BIN/examples/10-fault-tolerance/elastic
[[ -x $EX ]] || { echo "$EX: not built (make examples)"; exit 1; }
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 12000))
export BATON_TIMEOUT=2 BATON_ATOMIC_COLLECTIVES=1
pids=()
for r in 0 1 2 3; do
  env BATON_RANK=$r BATON_NRANKS=4 NCCL_COMM_ID=127.0.0.1:$port \
    "$EX" --steps 30 --step-ms 50 --grow-at 20 --join-file "$dir/ticket" >"$dir/out.$r" 2>&1 &
  pids+=($!)
done
"$EX" --steps 30 --step-ms 50 --join "$dir/ticket" >"$dir/out.new" 2>&1 &
newcomer=$!
for ((i = 0; i < 1500; i++)); do grep -q '^step 8:' "$dir/out.0" && break; sleep 0.02; done
kill -9 "${pids[2]}"
wait "${pids[2]}" 2>/dev/null  # (quietly: bash would say "Killed")
echo "launcher: killed rank 2 (pid ${pids[2]}) after step 8"
rc=0
for r in 0 1 3; do wait "${pids[$r]}" || rc=1; done
wait $newcomer || rc=1
cat "$dir/out.0"
grep -hv '^step ' "$dir/out.1" "$dir/out.3" "$dir/out.new"
exit $rc
