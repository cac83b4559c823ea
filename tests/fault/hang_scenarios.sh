#!/usr/bin/env bash
# Scripted hangs and mismatches (lesson 14): each scenario starts 4 processes of
# tests/process/hang_worker, one of which (the culprit) makes one mistake at one step, then runs
# tools/baton-doctor on the ranks' dumps. A scenario passes when
#   - every rank but a stopped or idle culprit ends within BATON_WAIT_TIMEOUT + 5 s of its start
#     (of the cut, for a cut link; the culprit that sits in user code is sent BATON_DUMP_SIGNAL, then
#     killed, as a launcher would);
#   - the doctor's first verdict names the scenario's cause, the culprit rank, the operation and its
#     number (a cut link: the network; the clean run: no fault, and every result exact);
#   - no worker process is left.
# On one host, then the doctor's input handling: a corrupt dump beside good ones (named, skipped),
# two jobs' dumps in one folder (told apart), the mismatches again under BATON_CHECK_MODE=debug, and
# an AllReduce of count 0 among ranks with data (every rank fails at once, naming the culprit and
# both values), and a dump folder that cannot be made (the job goes on).
# With --hosts 2 the ranks run 2 per namespaced host (tests/net/netns.sh, as root; skipped with the
# reason elsewhere), and a ninth scenario cuts the link between the hosts mid-run.
#
#   hang_scenarios.sh [--hosts 1|2] TESTDIR BINDIR [scenario ...]      (make test runs both)
set -uo pipefail
hosts=1
if [[ ${1:-} == --hosts ]]; then hosts=$2; shift 2; fi
TESTDIR=${1:?usage: hang_scenarios.sh [--hosts 1|2] TESTDIR BINDIR [scenario ...]}
BINDIR=${2:?usage: hang_scenarios.sh [--hosts 1|2] TESTDIR BINDIR [scenario ...]}
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
export BATON_NETNS_PREFIX=bth
if ((hosts == 2)); then
  if ! reason=$("$HERE/../net/netns.sh" check 2>&1); then
    echo "SKIP: $reason"
    exit 77
  fi
  "$HERE/../net/netns.sh" up 2 || { echo "FAIL: netns.sh up"; exit 1; }
fi
doctor=$(cd "$(dirname "$0")/../.." && pwd)/tools/baton-doctor/baton-doctor
worker=$TESTDIR/hang_worker
scenarios=("$@")
[[ ${#scenarios[@]} -gt 0 ]] || scenarios=(clean skip order count type redop root stop group-order)
((hosts == 2)) && [[ $# -eq 0 ]] && scenarios+=(cut)
T=${HANG_WAIT_TIMEOUT:-3}
n=4
work=$(mktemp -d)
cleanup() {
  pkill -9 -f "tag $work" 2>/dev/null
  rm -rf "$work"
  if ((hosts == 2)); then "$HERE/../net/netns.sh" down; fi
}
trap cleanup EXIT
failed=0 passed=0

# scenario -> step, expected verdict "kind field op:seq[|op:seq]". A stopped rank may also hold the
# previous step: across hosts its proxy (stopped with it) may not have sent that step's last data.
declare -A AT=([clean]=3 [skip]=5 [order]=4 [count]=4 [zero]=4 [type]=4 [redop]=4 [root]=2 [stop]=5 [group-order]=0 [cut]=2)
declare -A WANT=([clean]="none" [skip]="missing-call - AllGather:5" [order]="mismatch op AllReduce:4"
  [count]="mismatch count AllReduce:4" [type]="mismatch type AllReduce:4" [redop]="mismatch redop AllReduce:4"
  [root]="mismatch root Broadcast:2"
  [stop]="no-dump - AllGather:5|AllReduce:4" [group-order]="mismatch op AllReduce:0" [cut]="network - -")

run_scenario() {  # name culprit dumpdir -> sets $dir; returns 1 on a hang
  local s=$1 culprit=$2 dumpdir=$3
  dir=$work/$s
  mkdir -p "$dir"
  local port=$((20000 + RANDOM % 12000)) pids=() r t0
  t0=$(date +%s%3N)
  for ((r = 0; r < n; r++)); do
    local where=(env NCCL_COMM_ID=127.0.0.1:$port)  # 2 hosts: ranks 0, 1 on bth-h0, ranks 2, 3 on bth-h1
    ((hosts == 2)) && where=(ip netns exec bth-h$((r / 2)) env NCCL_HOSTID=bth-h$((r / 2)) NCCL_COMM_ID=10.77.0.1:$port
      NCCL_SOCKET_IFNAME=veth0)
    "${where[@]}" BATON_RANK=$r BATON_NRANKS=$n BATON_WAIT_TIMEOUT=$T BATON_DUMP_DIR="$dumpdir" \
      BATON_DUMP_SIGNAL=SIGUSR1 timeout -s KILL 60 "$worker" --scenario "$s" --culprit "$culprit" --at "${AT[$s]}" \
      --tag "$work" >"$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  if [[ $s == cut ]]; then  # every rank past its first steps, then the link goes down
    for ((i = 0; i < 300; i++)); do
      [[ $(cat "$dir"/out.* 2>/dev/null | grep -c running) == "$n" ]] && break
      sleep 0.1
    done
    sleep 0.5
    t0=$(date +%s%3N)
    ip -n bth-hub link set h1 down
  fi
  local hung="" idle=0
  [[ $s == skip || $s == stop ]] && idle=1
  for ((r = 0; r < n; r++)); do
    ((idle && r == culprit)) && continue
    wait "${pids[$r]}" 2>/dev/null
    local took=$(($(date +%s%3N) - t0))
    if ((took > (T + 5) * 1000)); then hung+=" rank $r took ${took} ms"; fi
  done
  if ((idle)); then  # the launcher's turn: ask the culprit for a dump, then end it
    local child
    child=$(pgrep -P "${pids[$culprit]}")  # the worker, below `timeout`
    kill -USR1 $child 2>/dev/null
    for ((i = 0; i < 20; i++)); do
      ls "$dumpdir"/baton-dump-*-rank$culprit.json >/dev/null 2>&1 && break
      [[ $s == stop ]] && break
      sleep 0.1
    done
    kill -9 $child "${pids[$culprit]}" 2>/dev/null
    wait "${pids[$culprit]}" 2>/dev/null
  fi
  [[ $s == cut ]] && ip -n bth-hub link set h1 up
  if [[ -n $hung ]]; then
    echo "  HANG:$hung (bound: BATON_WAIT_TIMEOUT $T s + 5 s)"
    return 1
  fi
  return 0
}

check_verdict() {  # name culprit verdict-line
  local s=$1 culprit=$2 line=$3 kind field ops alt ok=0
  read -r kind field ops <<<"${WANT[$s]}"
  if [[ $kind == none ]]; then
    [[ $line == *"kind=none"* ]]
    return
  fi
  [[ $line == *"kind=$kind "* ]] || return 1
  [[ $kind == network || $line == *"ranks=$culprit "* ]] || return 1
  IFS='|' read -ra alt <<<"$ops"
  for o in "${alt[@]}"; do [[ $o == - || $line == *"op=${o%%:*} seq=${o##*:}"* ]] && ok=1; done
  ((ok)) || return 1
  [[ $field == - || $line == *"field=$field"* ]]
}

for s in "${scenarios[@]}"; do
  culprit=$(((RANDOM % (n - 1)) + 1))  # not rank 0, whose dump has nothing special; any of the others
  ok=1 why=""
  run_scenario "$s" "$culprit" "$work/$s/dumps" || ok=0 why="hang"
  "$doctor" --verdicts "$dir/dumps" >"$dir/doctor.txt" 2>&1
  rc=$?
  verdict=$(grep -m1 '^verdict ' "$dir/doctor.txt")
  if ! check_verdict "$s" "$culprit" "$verdict"; then ok=0 why+=" wrong verdict (want '${WANT[$s]}' for rank $culprit)"; fi
  if [[ $s == clean ]]; then
    ((rc == 0)) || ok=0 why+=" doctor exit $rc on a clean run"
    grep -q WRONG "$dir"/out.* && ok=0 why+=" wrong results"
    [[ $(grep -l "completed" "$dir"/out.* | wc -l) == "$n" ]] || ok=0 why+=" not every rank completed"
  else
    ((rc == 1)) || ok=0 why+=" doctor exit $rc (want 1)"
  fi
  if pgrep -f "tag $work" >/dev/null; then ok=0 why+=" workers left"; pkill -9 -f "tag $work"; fi
  if ((ok)); then
    passed=$((passed + 1))
    echo "PASS $s (culprit rank $culprit, $hosts host(s)): $(grep -m1 'FAULT\|no fault' "$dir/doctor.txt" | sed 's/^ *//')"
  else
    failed=$((failed + 1))
    echo "FAIL $s (culprit rank $culprit, $hosts host(s)):$why"
    sed 's/^/    /' "$dir/doctor.txt" | head -30
    tail -n 3 "$dir"/out.* | sed 's/^/    /'
  fi
done

# The doctor's input: a truncated dump beside good ones, and a second job's dumps in the same folder.
if ((hosts == 1)) && [[ -d $work/clean/dumps && -d $work/skip/dumps ]]; then
  mixed=$work/mixed
  mkdir -p "$mixed"
  cp "$work"/clean/dumps/*.json "$work"/skip/dumps/*.json "$mixed"/
  f=$(ls "$work"/clean/dumps/*.json | head -1)
  head -c 200 "$f" >"$mixed/baton-dump-0000000000000000-rank0.json"
  "$doctor" --verdicts "$mixed" >"$work/mixed.txt" 2>&1
  if grep -q "skipping .*baton-dump-0000000000000000-rank0.json" "$work/mixed.txt" &&
    [[ $(grep -c '^communicator ' "$work/mixed.txt") == 2 ]] && grep -q 'kind=none' "$work/mixed.txt" &&
    grep -q 'kind=missing-call' "$work/mixed.txt"; then
    passed=$((passed + 1))
    echo "PASS doctor input: a corrupt file named and skipped, two jobs told apart"
  else
    failed=$((failed + 1))
    echo "FAIL doctor input"
    sed 's/^/    /' "$work/mixed.txt" | head -30
  fi
fi

# BATON_CHECK_MODE=debug: each mismatch fails at once on every rank, as ncclInvalidUsage naming the
# culprit and both values (well before BATON_WAIT_TIMEOUT: the check, not a timeout, ends it).
if ((hosts == 1)); then
  for s in count zero type redop root order group-order; do
    culprit=$(((RANDOM % (n - 1)) + 1))
    dir=$work/debug-$s
    mkdir -p "$dir"
    port=$((20000 + RANDOM % 12000)) pids=() t0=$(date +%s%3N)
    for ((r = 0; r < n; r++)); do
      env BATON_RANK=$r BATON_NRANKS=$n NCCL_COMM_ID=127.0.0.1:$port BATON_WAIT_TIMEOUT=$T BATON_CHECK_MODE=debug \
        timeout -s KILL 60 "$worker" --scenario "$s" --culprit "$culprit" --at "${AT[$s]}" --tag "$work" \
        >"$dir/out.$r" 2>&1 &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    took=$(($(date +%s%3N) - t0)) ok=1
    for ((r = 0; r < n; r++)); do
      if ((r == culprit)); then want="differ from this rank's (rank $culprit): "
      else want="rank $culprit's arguments differ from this rank's (rank $r): "; fi
      grep -q "failed: .*$want.*(BATON_CHECK_MODE=debug)" "$dir/out.$r" || ok=0
    done
    if ((ok && took < T * 1000)); then
      passed=$((passed + 1))
      echo "PASS debug check, $s (culprit rank $culprit): every rank failed in $took ms: $(grep -ho "rank $culprit's arguments.*" "$dir"/out.* | head -1)"
    else
      failed=$((failed + 1))
      echo "FAIL debug check, $s (culprit rank $culprit, $took ms)"
      tail -n 2 "$dir"/out.* | sed 's/^/    /'
    fi
  done
fi

# A dump folder that cannot be made: the job completes, the error names the folder.
if ((hosts == 1)) && [[ " ${scenarios[*]} " == *" clean "* ]]; then
  run_scenario clean 1 /proc/baton-cannot-be-here >/dev/null
  if [[ $(grep -l "completed" "$dir"/out.* | wc -l) == "$n" ]] && grep -q "/proc/baton-cannot-be-here" "$dir/out.0"; then
    passed=$((passed + 1))
    echo "PASS unwritable dump folder: the job completed and the error names it"
  else
    failed=$((failed + 1))
    echo "FAIL unwritable dump folder"
    tail -n 3 "$dir"/out.* | sed 's/^/    /'
  fi
fi

echo "hang scenarios on $hosts host(s): $passed passed, $failed failed"
((failed == 0))
