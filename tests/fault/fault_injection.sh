#!/usr/bin/env bash
# The fault-injection suite (lesson 10). Each trial starts one process per rank running
# tests/process/fault_worker (every collective in turn, each result checked exactly) and injects
# one fault at a random step and a random moment inside it:
#   kill            SIGKILL of a random rank (most trials)
#   stop            SIGSTOP of a random rank: a hang, not a death (every 8th trial)
#   exit-in-shrink  SIGKILL, then a second rank exits between agreeing and shrinking (every 8th)
# Transports alternate between shared memory and NET over loopback; every other trial runs with
# BATON_ATOMIC_COLLECTIVES=1 (a failed AllReduce must leave its input in place), every fourth with
# non-blocking communicators (the failure arrives through ncclCommGetAsyncError), every third
# (shared-memory) trial on ncclMemAlloc buffers registered with the communicator, so the survivors
# have the dead rank's memory mapped and run the zero-copy ring (lesson 09).
#
# A trial passes when every survivor: reports its operation failed, naming the dead rank, within
# BATON_TIMEOUT + 1 s of the fault (else it counts as a hang); never returned success with a wrong
# result; agreed with the others on exactly the faulty ranks; shrank; ran 10 exact collectives on
# the child; and when /dev/shm holds no new baton segment and no worker process is left.
#
#   fault_injection.sh [--trials N] [--seed S] TESTDIR      (make test: 12 trials; make fault-long: 120)
set -uo pipefail
trials=12 seed=$RANDOM
while [[ $# -gt 1 ]]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) break ;;
  esac
done
TESTDIR=${1:?usage: fault_injection.sh [--trials N] [--seed S] TESTDIR}
worker=$TESTDIR/fault_worker
timeoutSec=${BATON_TIMEOUT:-2}
RANDOM=$seed
echo "fault injection: $trials trials, seed $seed, BATON_TIMEOUT=$timeoutSec s"
shmList() { find /dev/shm -maxdepth 1 -name 'baton-*' -printf '%f\n' 2>/dev/null | sort; }
hangs=0 wrong=0 leaks=0 orphans=0 unrecovered=0 passed=0 restored=0 split=0 leftByKilled=0 allLeft=
detKill=() detStop=()
work=$(mktemp -d)
trap 'pkill -9 -f "$work" 2>/dev/null; rm -rf "$work"' EXIT

for ((t = 1; t <= trials; t++)); do
  fault=kill n=4 second=-1
  if ((t % 8 == 0)); then fault=stop; elif ((t % 8 == 4)); then fault=exit-in-shrink n=5; fi
  victim=$((RANDOM % n))
  if [[ $fault == exit-in-shrink ]]; then second=$(((victim + 1 + RANDOM % (n - 1)) % n)); fi
  at=$((RANDOM % 30)) delay=$((RANDOM % 2000))
  counts=(1000 20000 300000); count=${counts[RANDOM % 3]}
  env=(BATON_TIMEOUT=$timeoutSec BATON_WAIT_TIMEOUT=60 BATON_BOOTSTRAP_TIMEOUT=30)
  transport=shm atomic=""
  if ((t % 3 == 0)); then transport=net env+=(NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SOCKET_IFNAME=lo); fi
  if ((t % 2 == 0)); then atomic=", atomic" env+=(BATON_ATOMIC_COLLECTIVES=1); fi
  nb=0
  if ((t % 4 == 1)); then nb=1 atomic=", non-blocking"; fi  # failures arrive as the async error
  memory=plain  # every third shm trial: ncclMemAlloc buffers registered, peers' memory mapped (lesson 09)
  if ((t % 3 == 1)); then memory=registered atomic+=", registered"; fi
  # Plain shm trials alternate single copies forced on (4-5 ranks on 2 cores leave them off by default).
  if [[ $memory == plain && $transport == shm ]] && ((t % 4 < 2)); then env+=(BATON_SINGLE_COPY=1) atomic+=", single copy"; fi
  dir=$work/t$t
  mkdir -p "$dir"
  shmBefore=$(shmList)
  port=$((20000 + RANDOM % 12000))
  pids=()
  for ((r = 0; r < n; r++)); do
    env "${env[@]}" BATON_RANK=$r BATON_NRANKS=$n NCCL_COMM_ID=127.0.0.1:$port \
      timeout -s KILL 60 "$worker" --victim $victim --fault $fault --second $second --at $at --delay-us $delay \
      --count $count --nonblocking $nb --memory $memory --stamp "$dir/stamp" >"$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  ok=1 why=""
  for ((r = 0; r < n; r++)); do
    [[ $r == "$victim" ]] && continue
    wait "${pids[$r]}" 2>/dev/null  # (bash would print "Killed" for the victim's job)
    echo $? >"$dir/rc.$r"
  done
  # A stopped victim stays stopped: the job (here, this script) kills it, as a launcher would.
  kill -9 "${pids[$victim]}" 2>/dev/null
  wait "${pids[$victim]}" 2>/dev/null
  kill0=$(cat "$dir/stamp" 2>/dev/null || echo 0)
  survivors=$((n - 1 - (second >= 0)))
  det=()
  for ((r = 0; r < n; r++)); do
    [[ $r == "$victim" || $r == "$second" ]] && continue
    out=$dir/out.$r
    restored=$((restored + $(grep -c 'rolled back, input restored' "$out")))
    if grep -q WRONG "$out"; then wrong=$((wrong + 1)) ok=0 why+=" rank $r: $(grep -m1 WRONG "$out")"; fi
    failedAt=$(sed -n 's/.* at \([0-9]*\) ns: .*/\1/p' "$out" | head -1)
    if [[ -z $failedAt || $kill0 == 0 ]]; then
      hangs=$((hangs + 1)) ok=0 why+=" rank $r never reported the failure"
      continue
    fi
    ms=$(((failedAt - kill0) / 1000))
    ms=$(awk -v us=$ms 'BEGIN { printf "%.1f", (us < 0 ? 0 : us) / 1000 }')
    det+=("$ms")
    if awk -v ms="$ms" -v lim="$timeoutSec" 'BEGIN { exit !(ms > (lim + 1) * 1000) }'; then
      hangs=$((hangs + 1)) ok=0 why+=" rank $r took $ms ms"
    fi
    expect="\\[$victim\\]"
    ((second >= 0)) && expect="\\[$((victim < second ? victim : second)),$((victim < second ? second : victim))\\]"
    if [[ $(cat "$dir/rc.$r") != 0 ]] || ! grep -q "recovered: $survivors ranks, 10 collectives exact" "$out" ||
      ! grep -q "agreed failed ranks $expect" "$out"; then
      unrecovered=$((unrecovered + 1)) ok=0 why+=" rank $r did not recover (rc $(cat "$dir/rc.$r")): $(tail -1 "$out")"
    fi
  done
  if [[ $atomic == ", atomic" ]]; then
    # All or nothing: once a survivor's AllReduce at step S failed, no survivor got past step S.
    steps=$(for ((r = 0; r < n; r++)); do [[ $r == "$victim" || $r == "$second" ]] || sed -n 's/.*failed at step \([0-9]*\) (\([A-Za-z]*\)).*/\1 \2/p' "$dir/out.$r" | head -1; done)
    firstAr=$(awk '$2 == "AllReduce" { print $1 }' <<<"$steps" | sort -n | head -1)
    latest=$(awk '{ print $1 }' <<<"$steps" | sort -n | tail -1)
    if [[ -n $firstAr && -n $latest ]] && ((latest > firstAr)); then
      split=$((split + 1)) ok=0 why+=" AllReduce at step $firstAr failed on one survivor, another went on to step $latest"
    fi
  fi
  # A segment whose creator was killed between creating it and its peer opening it stays until a
  # baton process sweeps it (the survivors' next connections do, unless the creator was still
  # alive then, as a stopped rank is); one a surviving process left is a leak.
  killedPids=" $(sed -n 's/^pid //p' "$dir/out.$victim") "
  ((second >= 0)) && killedPids+="$(sed -n 's/^pid //p' "$dir/out.$second") "
  for seg in $(comm -13 <(echo "$shmBefore") <(shmList)); do
    creator=${seg#baton-}; creator=${creator%%-*}
    if [[ $killedPids == *" $creator "* ]]; then leftByKilled=$((leftByKilled + 1)); allLeft+=" $seg"
    else leaks=$((leaks + 1)) ok=0 why+=" /dev/shm: $seg left by a survivor"; fi
  done
  if pgrep -f "$dir/stamp" >/dev/null; then orphans=$((orphans + 1)) ok=0 why+=" processes left"; fi
  slowest=$(printf '%s\n' "${det[@]:-0}" | sort -g | tail -1)
  if [[ $fault == stop ]]; then detStop+=("$slowest"); else detKill+=("$slowest"); fi
  printf 'trial %3d: %-14s rank %d', "$t" "$fault" "$victim"
  ((second >= 0)) && printf ' then rank %d' "$second"
  printf ' at step %d +%d us, %d ranks, %d floats, %s%s: every survivor failed within %s ms, ' "$at" "$delay" "$n" "$count" \
    "$transport" "$atomic" "$slowest"
  if ((ok)); then passed=$((passed + 1)); echo "recovered, ok"
  else
    keep=${TMPDIR:-/tmp}/baton-fault-trial-$t-$$
    cp -r "$dir" "$keep"
    echo "FAIL:$why (outputs kept in $keep)"
  fi
done

# What killed ranks left must go with the next baton process's first shm connection.
swept=yes
if [[ -n $allLeft ]]; then
  perf=$(dirname "$TESTDIR")/bin/baton-perf
  NCCL_P2P_DISABLE=1 "$perf" allreduce -t 2 -b 8 -e 8 -n 1 -w 0 >/dev/null 2>&1
  for seg in $allLeft; do [[ -e /dev/shm/$seg ]] && swept=no leaks=$((leaks + 1)); done
fi

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
echo
echo "faults injected: $trials (kill and exit-in-shrink: ${#detKill[@]}, SIGSTOP: ${#detStop[@]})"
echo "hangs (a survivor not failing within BATON_TIMEOUT + 1 s): $hangs"
echo "wrong results among operations that reported success: $wrong"
echo "leaked /dev/shm segments: $leaks; orphan processes: $orphans trials"
echo "segments a killed rank created but no peer had opened yet: $leftByKilled, all removed by the next baton process's sweep: $swept"
echo "all-or-nothing AllReduces that failed on a survivor and left its input restored: $restored; that succeeded on another survivor: $split"
echo "survivors that did not agree, shrink and run 10 exact collectives: $unrecovered"
echo "median detection (slowest survivor), kill: $(median "${detKill[@]}") ms; SIGSTOP: $(median "${detStop[@]}") ms (BATON_TIMEOUT=${timeoutSec} s)"
echo "$passed of $trials trials passed"
((passed == trials && leaks == 0))
