#!/usr/bin/env bash
# A peer process dies while the survivors have its ncclMemAlloc buffers mapped (lesson 09): with
# registered buffers (-R 1, the zero-copy ring reads and writes the peer's memory) and with
# symmetric windows (-R 2), SIGKILL one of 3 ranks in the middle of a long AllReduce loop. Every
# survivor must fail with an error that names the dead rank (baton-perf exits 3, not a signal: the mapping of
# the dead peer's memory stays valid, so nothing crashes), well before BATON_WAIT_TIMEOUT (60 s),
# and leave no ncclMemAlloc memory behind (the memfd pages go with the last process).
set -uo pipefail
BIN=${1:?usage: registered_kill_test.sh BINDIR}
fail=0
for R in 1 2; do
  for size in 64M 4K; do
    log=$(mktemp -d) port=$((20000 + RANDOM % 12000)) pids=()
    for r in 0 1 2; do
      env BATON_RANK=$r BATON_NRANKS=3 NCCL_COMM_ID=127.0.0.1:$port BATON_WAIT_TIMEOUT=60 \
        timeout 120 "$BIN/baton-perf" allreduce -b $size -e $size -n 100000000 -w 1 -c 0 -R $R >"$log/out.$r" 2>&1 &
      pids+=($!)
    done
    # Kill inside the loop, not during init: rank 0 prints the table's header once every rank has
    # checked in and the buffers are allocated (a rank killed before it checks in is known to nobody,
    # and the others wait out BATON_BOOTSTRAP_TIMEOUT: a fixed 3 s sleep once lost that race in CI).
    # The loop (10^8 iterations) is far longer than the wait.
    for ((i = 0; i < 600; i++)); do grep -q '(elements)' "$log/out.0" && break; sleep 0.1; done
    if ! grep -q '(elements)' "$log/out.0"; then
      echo "FAIL: -R $R $size: rank 0 printed no table within 60 s:"; tail -3 "$log/out.0"; fail=1
    fi
    sleep 1
    pkill -KILL -P "${pids[1]}"  # baton-perf itself, not the timeout wrapper
    t0=$SECONDS
    for r in 0 2; do
      wait "${pids[$r]}"
      rc=$?
      if [[ $rc -ne 3 ]]; then  # baton-perf: 3 = an NCCL call failed
        echo "FAIL: -R $R $size: survivor rank $r exited $rc (want 3)"; sed 's/^/    /' "$log/out.$r" | tail -5; fail=1
      elif ! grep -q "rank 1" "$log/out.$r"; then
        echo "FAIL: -R $R $size: survivor rank $r does not name rank 1:"; tail -3 "$log/out.$r"; fail=1
      fi
    done
    wait "${pids[1]}" 2>/dev/null
    secs=$((SECONDS - t0))
    if ((secs > 30)); then echo "FAIL: -R $R $size: survivors took ${secs} s"; fail=1; fi
    ((fail)) || echo "ok: -R $R $size: both survivors failed in ${secs} s naming rank 1: $(grep -ho 'rank 1[^;]*' "$log/out.0" | head -1 | cut -c1-100)"
    rm -rf "$log"
  done
done
exit $fail
