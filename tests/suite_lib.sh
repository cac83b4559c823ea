# The suite runner shared by tests/run_all.sh (make test) and tests/run_asan.sh (make test-asan):
# `suite NAME TIMEOUT CMD...` runs one command with a time limit, logs it under $LOGDIR and prints
# one line; `suite_summary` lists the skips with their reasons and ends with "N passed, N failed, N
# skipped". A suite that cannot run here at all exits 77 (automake's convention) after a `SKIP:` line
# saying why: it counts as skipped, not passed. A suite that ran but left some checks out (a `SKIP:`
# line, gtest's skipped tests) passes, says "ok, part skipped", and its reasons are listed too.
# The environment every suite runs in.
export BATON_BOOTSTRAP_TIMEOUT=${BATON_BOOTSTRAP_TIMEOUT:-60}
export BATON_TUNING_FILE=${BATON_TUNING_FILE:-none}  # the built-in model: choices do not depend on ~/.cache
export BATON_WAIT_TIMEOUT=${BATON_WAIT_TIMEOUT:-120}   # a hang fails the suite instead of stalling CI
# Sockets on loopback only: tests never address a network interface (docs/testing.md); the
# namespaced suites name their hosts' interface themselves.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
mkdir -p "$LOGDIR"
passed=0 failed=0 skipped=0 failures=()

suite() {  # suite NAME TIMEOUT_SECONDS CMD...
  local name=$1 limit=$2
  shift 2
  local log="$LOGDIR/$name.log" start=$SECONDS
  printf '%-44s ' "$name"
  local rc=0
  timeout -k 10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  if ((rc == 77)); then
    echo "skip  ($(grep -m1 -h '^SKIP: ' "$log" | cut -c7- | cut -c1-120))"
    skipped=$((skipped + 1))
  elif ((rc == 0)); then
    if grep -q -e '^SKIP: ' -e '^\[  SKIPPED \]' "$log"; then
      echo "ok, part skipped ($((SECONDS - start)) s)"
    else
      echo "ok    ($((SECONDS - start)) s)"
    fi
    passed=$((passed + 1))
  else
    echo "FAIL  ($((SECONDS - start)) s, exit $rc; log: $log)"
    tail -n 40 "$log" | sed 's/^/    | /'
    failed=$((failed + 1))
    failures+=("$name")
  fi
}

suite_summary() {
  echo
  # Tests that cannot run on this machine say why (gtest's GTEST_SKIP messages, scripts' SKIP lines).
  skips=$(grep -h -A1 ': Skipped$' "$LOGDIR"/*.log 2>/dev/null | grep -v -e ': Skipped$' -e '^--$' -e '^child helper' | sort -u)
  skips+=$'\n'$(grep -h '^SKIP: ' "$LOGDIR"/*.log 2>/dev/null | sort -u)
  if [[ -n ${skips//[$'\n']/} ]]; then echo "skipped here, with the reason:"; grep -v '^$' <<<"$skips" | sed 's/^/  /'; fi
  # Why each suite failed, again here: a CI page that keeps only the last lines of the run still shows it.
  local name
  for name in "${failures[@]}"; do
    echo "why $name failed (first failure lines and the last lines of $LOGDIR/$name.log):"
    { grep -m 6 -E 'FAIL|Failure|WRONG|[Ee]rror:' "$LOGDIR/$name.log"; tail -n 4 "$LOGDIR/$name.log"; } | cut -c1-600 | sed 's/^/    | /'
  done
  if ((failed)); then echo "failed suites: ${failures[*]}"; fi
  echo "$passed passed, $failed failed, $skipped skipped"
  ((failed == 0))
}
