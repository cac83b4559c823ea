#!/usr/bin/env bash
# Checks are single-quoted code run through eval, on purpose.
# shellcheck disable=SC2016,SC2034
# Behaviour tests for the baton-run launcher (tools/baton-run).
#   usage: tests/tools/baton_run_test.sh path/to/baton-run
# Prints "PASS: ..." / "FAIL: ..." per check and "N passed, M failed" at the
# end; exits non-zero if any check failed. Takes about 7 s (grace periods).
set -euo pipefail

BR=${1:?usage: $0 path/to/baton-run}
[[ -x $BR ]] || { echo "baton_run_test: '$BR' is not an executable" >&2; exit 2; }
BR=$(cd "$(dirname "$BR")" && pwd)/$(basename "$BR")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MARK="$$$RANDOM"  # makes "sleep 30.$MARK" unique to this run, for pgrep
npass=0 nfail=0

pass() { echo "PASS: $1"; npass=$((npass + 1)); }
fail() {
  echo "FAIL: $1"; nfail=$((nfail + 1))
  echo "  rc=$rc; stdout:"; sed 's/^/    /' "$TMP/out"; echo "  stderr:"; sed 's/^/    /' "$TMP/err"
}
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
now_ms() { date +%s%3N; }
# run ARGS...: runs baton-run, sets rc and ms (elapsed), output in $TMP/out, $TMP/err.
run() {
  local t0; t0=$(now_ms)
  set +e; "$BR" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null; rc=$?; set -e
  ms=$(($(now_ms) - t0))
}
has_out() { grep -qxF -- "$1" "$TMP/out"; }
has_err() { grep -qF -- "$1" "$TMP/err"; }
# no_procs PATTERN: nothing matches within 2 s (allows for zombie reaping).
no_procs() {
  local i
  for i in $(seq 20); do pgrep -f -- "$1" >/dev/null || return 0; sleep 0.1; done
  pgrep -af -- "$1" | sed 's/^/  left over: /'; return 1
}
rc=0; : >"$TMP/out"; : >"$TMP/err"

# --- help and bad input -------------------------------------------------------
run -h
check "-h prints usage, exit 0" eval '[[ $rc == 0 ]] && grep -q "^usage: baton-run -n N" "$TMP/out"'
run --help
check "--help prints usage, exit 0" eval '[[ $rc == 0 ]] && grep -q "^usage:" "$TMP/out"'
run true
check "missing -n: exit 2, message and usage" eval '[[ $rc == 2 ]] && has_err "missing -n" && has_err "usage:"'
for n in 0 1025 abc -3; do
  run -n "$n" true
  check "-n $n rejected with exit 2" eval '[[ $rc == 2 ]] && has_err "-n must be an integer from 1 to 1024" && has_err "usage:"'
done
run -n 2
check "no program: exit 2" eval '[[ $rc == 2 ]] && has_err "no program given" && has_err "usage:"'
run -n 2 --frobnicate true
check "unknown option: exit 2" eval '[[ $rc == 2 ]] && has_err "unknown option" && has_err "--frobnicate"'
run -n 2 --grace xyz true
check "bad --grace: exit 2" eval '[[ $rc == 2 ]] && has_err "--grace must be a number"'
BATON_RUN_GRACE=-1 run -n 1 true
check "bad BATON_RUN_GRACE: exit 2" eval '[[ $rc == 2 ]] && has_err "BATON_RUN_GRACE must be a number"'
run -n 2 no-such-program-$MARK arg
check "missing program: exit 127 with 'cannot execute'" eval \
  '[[ $rc == 127 ]] && has_err "baton-run: cannot execute '"'"'no-such-program-$MARK'"'"': No such file or directory"'
run -n 1 "$TMP"
check "non-executable program: exit 127" eval '[[ $rc == 127 ]] && has_err "Permission denied"'

# --- output relay and environment ------------------------------------------------
run -n 3 sh -c 'echo "hi $BATON_RANK"; echo "err $BATON_RANK" >&2'
check "all ranks succeed: exit 0" eval '[[ $rc == 0 ]]'
check "stdout lines prefixed with [r]" eval 'has_out "[0] hi 0" && has_out "[1] hi 1" && has_out "[2] hi 2" && [[ $(wc -l <"$TMP/out") == 3 ]]'
check "stderr lines prefixed, kept on stderr" eval 'has_err "[0] err 0" && has_err "[2] err 2" && ! grep -q err "$TMP/out"'

export BATON_RUN_TEST_INHERITED=kept
run -n 4 sh -c 'echo "$NCCL_COMM_ID $BATON_RANK $BATON_NRANKS $BATON_LOCAL_RANK $BATON_LOCAL_NRANKS $BATON_RUN_TEST_INHERITED"'
ids=$(sed -n 's/^\[[0-9]*\] \([^ ]*\) .*/\1/p' "$TMP/out" | sort -u)
check "NCCL_COMM_ID is 127.0.0.1:<port>, same for all ranks" eval '[[ $ids =~ ^127\.0\.0\.1:[0-9]+$ ]]'
# Rank 0 binds that port only later: a port from the kernel's ephemeral range could meanwhile go to
# another socket (bind(0), connect()) and fail rank 0 with "Address already in use".
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
check "the port lies below the kernel's ephemeral range ($low)" eval '(( ${ids##*:} < low ))'
env_ok() { local r; for r in 0 1 2 3; do grep -qx "\[$r\] [^ ]* $r 4 $r 4 kept" "$TMP/out" || return 1; done; }
check "BATON_RANK/NRANKS/LOCAL_* set, env inherited" env_ok
BATON_RUN_HOST=127.0.0.2 run -n 1 sh -c 'echo "$NCCL_COMM_ID"'
check "BATON_RUN_HOST replaces the host" eval 'grep -qx "\[0\] 127\.0\.0\.2:[0-9]*" "$TMP/out"'

run -n 2 --no-prefix sh -c 'echo plain'
check "--no-prefix leaves lines alone" eval '[[ $(cat "$TMP/out") == $'"'"'plain\nplain'"'"' ]]'
# Binding, as OpenMPI's mpirun: 1 or 2 ranks each on a CPU of its own by default, more not bound;
# --bind-to none and core say so explicitly (the CPUs are the ones this launcher may use).
cpus=$(python3 -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
set -- $cpus
ncpu=$#
cpu0=$1 cpu1=${2:-}
allowed() { grep -x "\[$1\] Cpus_allowed_list:[[:space:]]*$2" "$TMP/out" >/dev/null; }
all=$(grep Cpus_allowed_list /proc/self/status | awk '{print $2}')
if (( ncpu >= 2 )); then
  run -n 2 sh -c 'grep Cpus_allowed_list /proc/self/status'
  check "2 ranks: bound by default, rank 0 to CPU $cpu0 and rank 1 to CPU $cpu1" eval 'allowed 0 $cpu0 && allowed 1 $cpu1'
  run -n 2 --bind-to none sh -c 'grep Cpus_allowed_list /proc/self/status'
  check "--bind-to none: both ranks may run on every CPU ($all)" eval 'allowed 0 "$all" && allowed 1 "$all"'
else
  echo "SKIP: binding checks need 2 CPUs, this launcher may use $ncpu"
fi
run -n $((ncpu + 1)) sh -c 'grep Cpus_allowed_list /proc/self/status'
check "$((ncpu + 1)) ranks (more than 2, or than the CPUs): not bound by default" eval 'allowed 0 "$all"'
run -n $((ncpu + 1)) --bind-to core true
check "--bind-to core with more ranks than CPUs: exit 2, says why" eval '[[ $rc == 2 ]] && has_err "CPUs to bind them to"'
run -n 1 --bind-to socket true
check "--bind-to socket: exit 2 (core or none)" eval '[[ $rc == 2 ]] && has_err "--bind-to takes core or none"'
run -n 2 sh -c 'printf "line\npartial"'
check "partial last line flushed at EOF" eval 'has_out "[0] partial" && has_out "[1] partial" && has_out "[1] line"'
run -n 2 sh -c 'seq 1 5000'
check "many lines, none mangled" eval '[[ $(grep -cx "\[[01]\] [0-9]*" "$TMP/out") == 10000 ]]'

# --- failures, exit codes, grace period, cleanup ----------------------------------
run -n 3 sh -c "if [ \$BATON_RANK = 1 ]; then exit 3; fi; sleep 30.$MARK; true"
check "failing rank's code returned" eval '[[ $rc == 3 ]] && has_err "baton-run: rank 1 exited with code 3"'
check "default grace ~3 s then teardown (took ${ms} ms)" eval '(( ms >= 2500 && ms < 6000 ))'
check "no orphans after a failure" no_procs "30\.$MARK"

run -n 3 --grace 0.5 sh -c "if [ \$BATON_RANK = 2 ]; then exit 4; fi; sleep 30.$MARK; true"
check "--grace 0.5 bounds the teardown (took ${ms} ms)" eval '[[ $rc == 4 ]] && (( ms >= 400 && ms < 2500 ))'
BATON_RUN_GRACE=0.2 run -n 2 sh -c "if [ \$BATON_RANK = 0 ]; then exit 5; fi; sleep 30.$MARK; true"
check "BATON_RUN_GRACE honoured (took ${ms} ms)" eval '[[ $rc == 5 ]] && (( ms < 2000 ))'
run -n 2 --grace 0 sh -c "trap '' TERM; if [ \$BATON_RANK = 0 ]; then sleep 0.3; exit 6; fi; sleep 30.$MARK; true"
check "SIGKILL 1 s after an ignored SIGTERM (took ${ms} ms)" eval '[[ $rc == 6 ]] && (( ms >= 1200 && ms < 3000 ))'
check "no orphans after SIGKILL escalation" no_procs "30\.$MARK"

run -n 3 --grace 5 sh -c 'case $BATON_RANK in 2) exit 4;; 0) sleep 0.3; echo done; exit 9;; esac'
check "first failure's code wins; others may finish in the grace" eval \
  '[[ $rc == 4 ]] && has_out "[0] done" && has_err "rank 0 exited with code 9" && (( ms < 3000 ))'
run -n 2 sh -c 'if [ $BATON_RANK = 1 ]; then kill -USR1 $$; fi; sleep 0.2'
check "rank killed by signal: 128+sig and its name" eval \
  '[[ $rc == 138 ]] && has_err "baton-run: rank 1 killed by signal SIGUSR1"'

# --- signals to baton-run itself ------------------------------------------------------
"$BR" -n 3 sh -c "trap 'echo got INT; exit 7' INT; sleep 30.$MARK & wait" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for i in $(seq 50); do [[ $(pgrep -fc "^sleep 30\.$MARK") == 3 ]] && break; sleep 0.1; done
kill -INT $pid 2>/dev/null || true; set +e; wait $pid; rc=$?; set -e
check "SIGINT forwarded to ranks" eval '[[ $rc == 7 ]] && has_out "[0] got INT" && has_out "[2] got INT"'
check "no orphans after SIGINT" no_procs "30\.$MARK"

"$BR" -n 2 sh -c "sleep 30.$MARK; true" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for i in $(seq 50); do [[ $(pgrep -fc "^sleep 30\.$MARK") == 2 ]] && break; sleep 0.1; done
kill -TERM $pid 2>/dev/null || true; set +e; wait $pid; rc=$?; set -e
check "SIGTERM forwarded: exit 143" eval '[[ $rc == 143 ]]'
check "no orphans after SIGTERM" no_procs "30\.$MARK"

"$BR" -n 3 sh -c "echo up; sleep 30.$MARK; true" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for i in $(seq 50); do [[ $(pgrep -fc "^sleep 30\.$MARK") == 3 ]] && break; sleep 0.1; done
started=$(pgrep -fc "^sleep 30\.$MARK" || true)
kill -KILL $pid 2>/dev/null || true; set +e; wait $pid 2>/dev/null; rc=$?; set -e
check "ranks and grandchildren were running ($started sleeps)" eval '[[ $started == 3 ]]'
check "no orphans after baton-run is SIGKILLed" no_procs "30\.$MARK"

echo "$npass passed, $nfail failed"
(( nfail == 0 ))
