#!/usr/bin/env bash
# A process on this host dies mid-run: the rank that waits on it notices within milliseconds (a
# wait on a same-host peer checks that the process still exists) and names it; its failure marks
# its ring FIFOs, so the survivor waiting on it stops too ("peer rank 2 failed"); the survivors
# revoke, shrink the dead rank out with NCCL_SHRINK_ABORT and run 10 exact allreduces
# (tests/process/shrink_worker.cc). BATON_WAIT_TIMEOUT is 60 s: finishing in seconds shows that
# no survivor waited for it.
set -uo pipefail
TESTDIR=${1:?usage: shrink_local_test.sh TESTDIR}
n=3 victim=1 port=$((20000 + RANDOM % 12000)) fail=0
log=$(mktemp -d)
t0=$SECONDS
pids=()
for ((r = 0; r < n; r++)); do
  env BATON_RANK=$r BATON_NRANKS=$n NCCL_COMM_ID=127.0.0.1:$port BATON_WAIT_TIMEOUT=60 \
    timeout 120 "$TESTDIR/shrink_worker" --victim $victim --die-after 3 >"$log/out.$r" 2>&1 &
  pids+=($!)
done
for ((r = 0; r < n; r++)); do wait "${pids[$r]}"; echo $? >"$log/rc.$r"; done
secs=$((SECONDS - t0))
cat "$log"/out.* | grep '^rank'
for ((r = 0; r < n; r++)); do
  [[ $r == "$victim" ]] && continue
  if [[ $(cat "$log/rc.$r") != 0 ]] || ! grep -q "shrank from 3 to 2 ranks.*10 steps after shrink exact" "$log/out.$r"; then
    echo "FAIL: rank $r did not shrink and continue"; fail=1
  fi
done
if grep -q "rank $victim (pid [0-9]*, this host)" "$log"/out.*; then
  echo "PASS: a survivor named the dead process: $(grep -ho "rank $victim (pid [0-9]*, this host)[^(]*" "$log"/out.* | head -1)"
else
  echo "FAIL: no survivor reported rank $victim's death"; fail=1
fi
if ((secs < 10)); then echo "PASS: detected, propagated, revoked, shrank and ran 10 steps in $secs s (BATON_WAIT_TIMEOUT=60)"
else echo "FAIL: took $secs s"; fail=1; fi
rm -rf "$log"
exit $fail
