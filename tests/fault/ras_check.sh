#!/usr/bin/env bash
# NCCL's RAS service (lesson 14), on real processes: 8 ranks of tests/process/ras_worker run
# AllReduces while clients ask the job's RAS service (NCCL_RAS_ADDR on loopback) what it is doing.
# It passes when
#   - baton-ras answers in under 1 s with every rank RUNNING (the job summary, 8 processes);
#   - a client written against NCCL's protocol alone (ras_protocol_client.py: CLIENT PROTOCOL 2,
#     TIMEOUT, SET FORMAT json, STATUS) parses the JSON: 1 communicator, 8 ranks, none missing;
#   - queries never stall the job: the AllReduce counts move on between two answers with 20
#     queries in between; bad lines get NCCL's ERROR answers; a client that sends nothing or floods
#     bytes is dropped, one that hangs up mid-answer is survived;
#   - a monitor (baton-ras -m) prints PEER_DEAD naming a rank killed with SIGKILL, and the status
#     names it dead (text and JSON), with every survivor reporting the error;
#   - after the process that listens is killed too, another process takes the address over within
#     2 s and names both dead ranks;
#   - a rank that stops calling collectives (it stays in user code) is named by the status: the
#     others launched one AllReduce more, and they wait for data in it; a stopped process (SIGSTOP)
#     is named unresponsive, and a query with TIMEOUT 1 does not wait for it longer;
#   - a rank killed while the survivors agree and shrink: every query meanwhile is answered with
#     whole JSON, and then both communicators are reported (the old one with the dead rank, the new
#     one of 5 ranks, complete);
#   - no worker is left.
#
# With --hosts 2 the 8 ranks run 4 per namespaced host (tests/net/netns.sh, as root; skipped with
# the reason elsewhere), each host with its own service on its own loopback: asked on either host,
# it reports both hosts' ranks, and a rank killed on one host is named dead, with its host, by the
# other's.
#
#   ras_check.sh [--hosts 1|2] TESTDIR BINDIR      (make test runs both)
set -uo pipefail
hosts=1
if [[ ${1:-} == --hosts ]]; then hosts=$2; shift 2; fi
TESTDIR=${1:?usage: ras_check.sh [--hosts 1|2] TESTDIR BINDIR}
BINDIR=${2:?usage: ras_check.sh [--hosts 1|2] TESTDIR BINDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
export BATON_NETNS_PREFIX=btr
if ((hosts == 2)); then
  if ! reason=$("$HERE/../net/netns.sh" check 2>&1); then
    echo "SKIP: $reason"
    exit 77
  fi
  "$HERE/../net/netns.sh" up 2 || { echo "FAIL: netns.sh up"; exit 1; }
fi
worker=$TESTDIR/ras_worker
ras=$BINDIR/baton-ras
client=$HERE/ras_protocol_client.py
for f in "$worker" "$ras"; do [[ -x $f ]] || { echo "FAIL: $f is missing"; exit 1; }; done
if ! command -v ss >/dev/null; then echo "SKIP: 'ss' (iproute2) is needed to find the listening process"; exit 77; fi
work=$(mktemp -d)
cleanup() {
  pkill -9 -f "tag $work" 2>/dev/null
  [[ -n ${monitor_pid:-} ]] && kill "$monitor_pid" 2>/dev/null
  rm -rf "$work"
  if ((hosts == 2)); then "$HERE/../net/netns.sh" down; fi
}
trap cleanup EXIT
failed=0 passed=0
pass() { echo "  ok: $*"; passed=$((passed + 1)); }
fail() { echo "  FAIL: $*"; failed=$((failed + 1)); }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_job() {  # n dir extra-worker-args... ; sets pids, rasport
  local n=$1 dir=$2
  shift 2
  mkdir -p "$dir"
  rasport=$(free_port)
  local port=$((20000 + RANDOM % 12000)) r
  pids=()
  for ((r = 0; r < n; r++)); do
    local where=(env NCCL_COMM_ID=127.0.0.1:$port)  # 2 hosts: ranks 0-3 on btr-h0, 4-7 on btr-h1
    ((hosts == 2)) && where=(ip netns exec btr-h$((r * 2 / n)) env NCCL_HOSTID=btr-h$((r * 2 / n))
      NCCL_COMM_ID=10.77.0.1:$port NCCL_SOCKET_IFNAME=veth0)
    "${where[@]}" BATON_RANK=$r BATON_NRANKS=$n NCCL_RAS_ADDR=127.0.0.1:$rasport \
      BATON_WAIT_TIMEOUT=60 BATON_TIMEOUT=5 BATON_RAS_IDLE_TIMEOUT=2 timeout -s KILL 120 "$worker" --stop "$dir/stop" "$@" --tag "$work" \
      >"$dir/out.$r" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < 300; i++)); do
    [[ $(cat "$dir"/out.* 2>/dev/null | grep -c running) == "$n" ]] && return 0
    sleep 0.1
  done
  echo "  (the job did not start: $(cat "$dir"/out.* | head -5))"
  return 1
}
end_job() {  # dir
  touch "$1/stop"
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
# The pid of the process that listens on the RAS port.
listener() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
worker_of() { pgrep -P "$1"; }  # the worker below `timeout`

if ((hosts == 2)); then
  echo "== 8 processes on 2 namespaced hosts"
  dir=$work/hosts
  start_job 8 "$dir" || { echo "FAIL: job"; exit 1; }
  on() { ip netns exec "btr-h$1" env NCCL_RAS_ADDR=127.0.0.1:$rasport "${@:2}"; }
  for h in 0 1; do
    on $h "$ras" >"$dir/status.$h" 2>&1
    if awk '/^ *\(total\)/ {getline; exit !($1 == 2 && $2 == 4 && $4 == 8)}' "$dir/status.$h" &&
      ! grep -q "^Errors" "$dir/status.$h"; then
      pass "asked on btr-h$h: 2 nodes, 4 processes each, 8 processes, no error"
    else
      fail "asked on btr-h$h:"; sed 's/^/    /' "$dir/status.$h"
    fi
  done
  victim_pid=$(worker_of "${pids[6]}")
  kill -9 "$victim_pid"
  sleep 0.5
  on 0 "$ras" >"$dir/dead.0" 2>&1
  on 0 python3 "$client" 127.0.0.1 "$rasport" 5 >"$dir/dead.json" 2>&1
  if grep -q "Process $victim_pid on node btr-h1" "$dir/dead.0" && grep -q "The missing rank: 6$" "$dir/dead.0" &&
    grep -q "ranks=7 missing=1 dead=6 " "$dir/dead.json"; then
    pass "asked on btr-h0: rank 6 (pid $victim_pid) on btr-h1 is dead: $(cat "$dir/dead.json")"
  else
    fail "after the kill on btr-h1:"; sed 's/^/    /' "$dir/dead.0" "$dir/dead.json"
  fi
  end_job "$dir"
  left=$(pgrep -f "tag $work" | wc -l)
  if ((left == 0)); then pass "no worker left"; else fail "$left workers left"; fi
  echo "ras_check on 2 hosts: $passed passed, $failed failed"
  ((failed == 0))
  exit
fi

echo "== 8 processes, every rank healthy"
export NCCL_RAS_ADDR  # baton-ras reads it for its default address
dir=$work/healthy
start_job 8 "$dir" || { echo "FAIL: job"; exit 1; }
NCCL_RAS_ADDR=127.0.0.1:$rasport
t0=$(date +%s%N)
"$ras" >"$dir/status.txt" 2>&1
rc=$? took_ms=$((($(date +%s%N) - t0) / 1000000))
# A rank one AllReduce ahead of another is normal under way (MISMATCH, a warning, as in NCCL).
if ((rc == 0)) && ((took_ms < 1000)) && grep -qE "RUNNING  (OK|MISMATCH)$" "$dir/status.txt" &&
  ! grep -q "^Errors" "$dir/status.txt" &&
  awk '/^ *\(total\)/ {getline; exit !($1 == 1 && $4 == 8)}' "$dir/status.txt"; then
  pass "baton-ras answered in $took_ms ms: 1 node, 8 processes, RUNNING, no error"
else
  fail "baton-ras (exit $rc, $took_ms ms):"; sed 's/^/    /' "$dir/status.txt"
fi
"$ras" -v >"$dir/verbose.txt" 2>&1
if [[ $(grep -cE '^ +[0-9]+ .* RUNNING +[0-9]+' "$dir/verbose.txt") == 8 ]]; then
  pass "verbose status lists the 8 ranks with their counts"
else
  fail "verbose status:"; sed 's/^/    /' "$dir/verbose.txt"
fi
digest1=$(python3 "$client" 127.0.0.1 "$rasport" 5)
if [[ $digest1 == *"size=8 ranks=8 missing=0 dead= unresponsive="* ]]; then
  pass "NCCL-protocol client parsed the JSON: $digest1"
else
  fail "NCCL-protocol client: $digest1"
fi
for i in $(seq 20); do "$ras" -f json >/dev/null 2>&1; done
digest2=$(python3 "$client" 127.0.0.1 "$rasport" 5)
c1=$(sed -n 's/.*allreduce=\([0-9]*\)-.*/\1/p' <<<"$digest1")
c2=$(sed -n 's/.*allreduce=\([0-9]*\)-.*/\1/p' <<<"$digest2")
if [[ -n $c1 && -n $c2 ]] && ((c2 > c1)); then
  pass "the job went on under 20 queries: AllReduces $c1 -> $c2"
else
  fail "counts did not move: '$digest1' then '$digest2'"
fi
bad_format=$(python3 "$client" 127.0.0.1 "$rasport" --line "SET FORMAT xml")
bad_cmd=$(python3 "$client" 127.0.0.1 "$rasport" --line "REBOOT")
bad_timeout=$(python3 "$client" 127.0.0.1 "$rasport" --line "TIMEOUT soon")
if [[ $bad_format == "ERROR: Invalid format xml" && $bad_cmd == "ERROR: Unknown command REBOOT" &&
  $bad_timeout == "ERROR: Invalid timeout value soon" ]]; then
  pass "bad lines get NCCL's ERROR answers"
else
  fail "bad lines: '$bad_format' '$bad_cmd' '$bad_timeout'"
fi

# Clients that misbehave: one sends nothing (dropped after BATON_RAS_IDLE_TIMEOUT, 2 s here), one
# floods bytes with no line end (dropped), one hangs up before its answer; others are answered
# meanwhile and after.
python3 "$client" 127.0.0.1 "$rasport" --silent 6 >"$dir/silent.txt" &
silent=$!
flood=$(python3 "$client" 127.0.0.1 "$rasport" --flood)
python3 "$client" 127.0.0.1 "$rasport" --hang-up
t0=$(date +%s%N)
"$ras" >"$dir/after-bad.txt" 2>&1
rc=$? took_ms=$((($(date +%s%N) - t0) / 1000000))
wait "$silent"
if [[ $flood == "closed after"* && $(cat "$dir/silent.txt") =~ ^closed\ after\ [23]\. ]] && ((rc == 0)) &&
  ((took_ms < 1000)) && grep -q RUNNING "$dir/after-bad.txt"; then
  pass "bad clients dropped (flood: $flood; silent: $(cat "$dir/silent.txt")), a hang-up survived, others answered in $took_ms ms"
else
  fail "bad clients: flood '$flood', silent '$(cat "$dir/silent.txt")', then exit $rc in $took_ms ms"
fi

echo "== a rank killed with SIGKILL, then the listening process too"
server=$(listener "$rasport")
victim=
for ((r = 7; r > 0; r--)); do
  w=$(worker_of "${pids[$r]}")
  [[ -n $w && $w != "$server" ]] && { victim=$r victim_pid=$w; break; }
done
"$ras" -m >"$dir/monitor.txt" 2>"$dir/monitor.err" &
monitor_pid=$!
sleep 0.5
kill -9 "$victim_pid"
for ((i = 0; i < 30; i++)); do
  grep -q "PEER_DEAD" "$dir/monitor.txt" && break
  sleep 0.1
done
if grep -q "PEER_DEAD: Process $victim_pid on node $(hostname) managing rank $victim " "$dir/monitor.txt"; then
  pass "monitor: $(head -1 "$dir/monitor.txt" | cut -c1-140)"
else
  fail "monitor saw no PEER_DEAD for rank $victim (pid $victim_pid):"; sed 's/^/    /' "$dir"/monitor.*
fi
"$ras" >"$dir/dead.txt" 2>&1
if grep -q "^DEAD" "$dir/dead.txt" && grep -q "Process $victim_pid on node" "$dir/dead.txt" &&
  grep -q "The missing rank: $victim$" "$dir/dead.txt" && grep -q "ERROR$" "$dir/dead.txt"; then
  pass "status names rank $victim (pid $victim_pid) dead and the communicator in ERROR"
else
  fail "status after the kill:"; sed 's/^/    /' "$dir/dead.txt"
fi
digest=$(python3 "$client" 127.0.0.1 "$rasport" 5)
if [[ $digest == *"ranks=7 missing=1 dead=$victim unresponsive= "* && $digest == *"errors=6 "* ]]; then
  pass "JSON: $digest"
else
  fail "JSON after the kill: $digest"
fi
kill -9 "$server"
t0=$(date +%s%N)
for ((i = 0; i < 40; i++)); do
  "$ras" >"$dir/takeover.txt" 2>&1 && break
  sleep 0.1
done
took_ms=$((($(date +%s%N) - t0) / 1000000))
if ((took_ms < 2500)) && grep -q "2 job processes are considered dead" "$dir/takeover.txt"; then
  pass "another process answered $took_ms ms after the listener was killed, naming both dead ranks"
else
  fail "takeover ($took_ms ms):"; sed 's/^/    /' "$dir/takeover.txt"
fi
kill "$monitor_pid" 2>/dev/null; wait "$monitor_pid" 2>/dev/null; monitor_pid=
end_job "$dir"

echo "== a rank that stops calling collectives"
dir=$work/idle
start_job 4 "$dir" --idle-rank 2 --idle-at 40 || { echo "FAIL: job"; exit 1; }
NCCL_RAS_ADDR=127.0.0.1:$rasport
for ((i = 0; i < 100; i++)); do
  grep -q "stays in user code" "$dir/out.2" && break
  sleep 0.1
done
sleep 1.5  # the others' waits note their peer after their first give-up test
"$ras" >"$dir/status.txt" 2>&1
if grep -q "3 ranks have launched up to operation 41" "$dir/status.txt" &&
  grep -q "1 rank has launched up to operation 40" "$dir/status.txt" &&
  grep -qE "^  Rank 2 -- process [0-9]+ on node" "$dir/status.txt" &&
  grep -qE "^  Rank [0-9] waits for data from rank 2 for [0-9.]+ s, in AllReduce #40" "$dir/status.txt"; then
  pass "status names rank 2: 40 AllReduces against the others' 41, and a rank waiting for its data in AllReduce #40"
else
  fail "idle rank:"; sed 's/^/    /' "$dir/status.txt"
fi
# A stopped process (SIGSTOP: a debugger, swapped out) cannot answer; the query does not wait for it
# past the client's timeout, and names it.
server=$(listener "$rasport") stopped=
for r in 1 3 0; do
  w=$(worker_of "${pids[$r]}")
  [[ -n $w && $w != "$server" ]] && { stopped=$r stopped_pid=$w; break; }
done
kill -STOP "$stopped_pid"
t0=$(date +%s%N)
"$ras" -t 1 >"$dir/stopped.txt" 2>&1
took_ms=$((($(date +%s%N) - t0) / 1000000))
if ((took_ms < 2500)) && grep -q "Rank $stopped -- process $stopped_pid on node .*: did not answer in time" "$dir/stopped.txt" &&
  grep -q "Encountered 1 communication timeout" "$dir/stopped.txt"; then
  pass "a stopped rank ($stopped) is named unresponsive; the answer took $took_ms ms with TIMEOUT 1"
else
  fail "stopped rank ($took_ms ms):"; sed 's/^/    /' "$dir/stopped.txt"
fi
kill -9 "$stopped_pid"
end_job "$dir"

echo "== a rank killed while the others agree and shrink, queried throughout"
dir=$work/shrink
start_job 6 "$dir" --shrink 1 || { echo "FAIL: job"; exit 1; }
NCCL_RAS_ADDR=127.0.0.1:$rasport
server=$(listener "$rasport") victim=
for r in 4 3 5; do
  w=$(worker_of "${pids[$r]}")
  [[ -n $w && $w != "$server" ]] && { victim=$r victim_pid=$w; break; }
done
(  # queries back to back from before the kill until after the shrink: every answer must be whole JSON
  end=$(($(date +%s%N) + 2000000000)) asked=0 bad=0
  while (($(date +%s%N) < end)); do
    asked=$((asked + 1))
    "$ras" -t 2 -f json >"$dir/q.json" 2>&1 && python3 -m json.tool "$dir/q.json" >/dev/null 2>&1 || bad=$((bad + 1))
  done
  echo "$asked $bad" >"$dir/queries"
) &
querier=$!
sleep 0.5
kill -9 "$victim_pid"
wait "$querier"
read -r asked bad <"$dir/queries"
for ((i = 0; i < 50; i++)); do
  [[ $(cat "$dir"/out.* | grep -c "shrank to 5 ranks") == 5 ]] && break
  sleep 0.1
done
sleep 0.3
digest=$(python3 "$client" 127.0.0.1 "$rasport" 5)
if ((bad == 0)) && [[ $digest == *"size=6 ranks=5 missing=1 dead=$victim "* && $digest == *"size=5 ranks=5 missing=0 "* ]]; then
  pass "$asked queries in the 2 s around the kill and the shrink, every answer whole JSON; then: $(tr '\n' ' ' <<<"$digest")"
else
  fail "shrink: $bad of $asked answers bad; then: $digest"; tail -n 2 "$dir"/out.* | sed 's/^/    /'
fi
end_job "$dir"

left=$(pgrep -f "tag $work" | wc -l)
if ((left == 0)); then pass "no worker left"; else fail "$left workers left"; fi
echo "ras_check: $passed passed, $failed failed"
((failed == 0))
