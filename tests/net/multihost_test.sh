#!/usr/bin/env bash
# baton across hosts: two network namespaces on this machine (tests/net/netns.sh), each with its own
# host identity (NCCL_HOSTID), real TCP between them over veth. Ranks on one host use shared memory,
# ranks on different hosts the NET transport (sockets back-end, a proxy thread per communicator).
#
#   tests/net/multihost_test.sh BINDIR TESTDIR [--quick]
#
# Checks: the whole process correctness suite (rank_worker: every collective, type, operator and
# root, exact data) on 2 hosts x 2 ranks, and its quick set on registered buffers (the rings' Simple
# steps across hosts zero copy) and windows and with each round-based AlltoAll algorithm (the suite's MoE checks run the low-latency stage across
# the hosts with puts); the fused operations' checks (fused_worker); each protocol forced; helper threads and several sockets
# per connection; IPv6; then faults: a rank SIGKILLed mid-run (the survivor reports the dead peer by
# rank and address, well before BATON_WAIT_TIMEOUT), survivors revoking and shrinking a dead rank out
# (NCCL's recipe, then 10 exact steps), a cut link (no hang: the watchdog's heartbeat ends it; one
# side goes on, the other refuses),
# an interface name that does not exist (named in the error). Skipped, with the reason, where
# namespaces cannot be made (not root, no veth). Uses namespaces btt-h0, btt-h1 and btt-hub.
# KEEP_LOG=1 leaves every rank's output in /tmp/baton-multihost.* for reading afterwards.
set -uo pipefail
BIN=${1:?usage: multihost_test.sh BINDIR TESTDIR [--quick] [--net-plugin LIB]}
TESTDIR=${2:?usage: multihost_test.sh BINDIR TESTDIR [--quick] [--net-plugin LIB]}
shift 2
QUICK= NET_PLUGIN=
while (($#)); do
  case $1 in
    --quick) QUICK=--quick ;;
    --net-plugin) NET_PLUGIN=${2:?--net-plugin needs a library}; shift ;;
    *) echo "multihost_test.sh: unknown argument $1"; exit 2 ;;
  esac
  shift
done
# --net-plugin: every rank carries its NET traffic through that NCCL network plugin (lesson 16)
# instead of the built-in socket back-end, and each protocol's sweep runs once more through the
# v6-only build of baton's plugin; the fault checks (5.) are left to the built-in run.
[[ -z $NET_PLUGIN ]] || export NCCL_NET_PLUGIN=$NET_PLUGIN
HERE=$(cd "$(dirname "$0")" && pwd)
export BATON_NETNS_PREFIX=btt
LOG=$(mktemp -d /tmp/baton-multihost.XXXXXX)

if ! reason=$("$HERE/netns.sh" check 2>&1); then
  echo "SKIP: $reason"
  exit 77
fi
"$HERE/netns.sh" up 2 || { echo "FAIL: netns.sh up"; exit 1; }
cleanup() {
  local h p
  for h in btt-h0 btt-h1; do  # nothing of ours survives a failed check
    for p in $(ip netns pids "$h" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  "$HERE/netns.sh" down
  [ -n "${KEEP_LOG:-}" ] || rm -rf "$LOG"
}
trap cleanup EXIT
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }

source "$HERE/launch.sh"  # launch NAME RANKS_PER_HOST NHOSTS [ENV=VAL...] -- PROGRAM ARGS...
all_ok() {  # all_ok NAME N: every rank exited 0
  local r
  for ((r = 0; r < $2; r++)); do [[ $(cat "$LOG/$1.rc.$r") == 0 ]] || return 1; done
}
show() { tail -n 15 "$LOG/$1".out.* | sed 's/^/    | /'; }
# ready NAME N PATTERN: waits (60 s at most) until ranks 0..N-1 of NAME printed PATTERN, then 1 s
# more, so a fault lands in the run and not in init (where a rank that never checked in is known
# to nobody, and the others wait out BATON_BOOTSTRAP_TIMEOUT).
ready() {
  local i r all
  for ((i = 0; i < 600; i++)); do
    all=1
    for ((r = 0; r < $2; r++)); do grep -q "$3" "$LOG/$1.out.$r" 2>/dev/null || all=0; done
    ((all)) && break
    sleep 0.1
  done
  sleep 1
}

PERF=$BIN/baton-perf

# 1. The process correctness suite, 2 hosts x 2 ranks.
launch worker 2 2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT BATON_WAIT_TIMEOUT=60 -- timeout 600 "$TESTDIR/rank_worker" $QUICK
if all_ok worker 4 && grep -q "checks passed" "$LOG/worker.out.3"; then
  pass "rank_worker on 2 hosts x 2 ranks: $(grep -ho '[0-9]* checks passed' "$LOG/worker.out.0")"
else
  flunk "rank_worker on 2 hosts x 2 ranks"; show worker
fi
if grep -q "0\[0\] -> 1\[.*via SHM" "$LOG/worker.out.0" && grep -q "1\[.*\] -> 2\[.*via NET" "$LOG/worker.out.1"; then
  pass "ranks on one host connect by SHM, across hosts by NET"
else
  flunk "expected SHM inside a host and NET across: $(grep -h 'via' "$LOG"/worker.out.* | head -4)"
fi
# The suite forces MoE's low-latency stage too: across hosts its window is written with puts.
if grep -q "written with puts by the others" "$LOG/worker.out.0"; then
  pass "MoE low-latency stage across hosts: the peers' windows written with puts through the proxies"
else
  flunk "expected the MoE low-latency window with puts across hosts: $(grep -h 'fused:' "$LOG"/worker.out.* | head -2)"
fi

# 1b. The quick suite on registered ncclMemAlloc buffers and on symmetric windows (lesson 09): ranks
# of one host map each other's buffers, across hosts the NET transport carries them as before. Then
# with each round-based AlltoAll algorithm (lesson 12), the rounds' messages crossing hosts on NET.
for setting in BATON_TEST_MEMORY=registered BATON_TEST_MEMORY=window BATON_ALLTOALL_ALGO=pairwise \
               BATON_ALLTOALL_ALGO=bruck; do
  name="worker-${setting#*=}"
  launch "$name" 2 2 "$setting" BATON_WAIT_TIMEOUT=60 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET -- \
    timeout 300 "$TESTDIR/rank_worker" --quick
  if all_ok "$name" 4 && grep -q "checks passed" "$LOG/$name.out.3"; then
    pass "rank_worker --quick with $setting, 2 hosts x 2 ranks: $(grep -ho '[0-9]* checks passed' "$LOG/$name.out.0")"
  else
    flunk "rank_worker --quick with $setting, 2 hosts x 2 ranks"; show "$name"
  fi
done
# Registered send/recv buffers cross hosts zero copy: each rank's proxy sent steps from them.
zc=$(cat "$LOG"/worker-registered.out.* | grep -c 'zero copy (from registered user buffers)' || true)
if [ "$zc" -ge 4 ]; then
  pass "registered send/recv across hosts zero copy: $zc proxy connections sent from user buffers"
else
  flunk "expected NET zero copy across hosts on registered buffers: $(grep -h 'NET: rank' "$LOG"/worker-registered.out.* | head -4)"
fi
# So do the rings' Simple steps (the quick suite's sizes take LL128 by default, so Simple is
# forced): exact, and their collectives say so on every rank.
launch worker-registered-simple 2 2 BATON_TEST_MEMORY=registered NCCL_PROTO=Simple BATON_WAIT_TIMEOUT=60 \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL -- timeout 300 "$TESTDIR/rank_worker" --quick
zcColl=$(cat "$LOG"/worker-registered-simple.out.* | grep -c 'algorithm Ring protocol Simple .* NET zero copy' || true)
if all_ok worker-registered-simple 4 && [ "$zcColl" -ge 40 ]; then
  pass "registered ring collectives across hosts zero copy, Simple: $(grep -ho '[0-9]* checks passed' \
    "$LOG/worker-registered-simple.out.0"), $zcColl collectives took the path"
else
  flunk "expected exact ring collectives with NET zero copy across hosts: $zcColl COLL lines say it"
  show worker-registered-simple
fi

# 1c. The device-side API inside each host's LSA team, then the tensor-parallel fused operations
# (lesson 11), every stage, forward and backward, exact, the row blocks crossing hosts on NET; chunks
# of 1 KiB, so the optimized stage's chunked path runs on these small shapes.
# The device API's puts to the other host's ranks go through their proxies (the INFO line says so).
launch fused 2 2 BATON_WAIT_TIMEOUT=60 BATON_FUSED_MIN_CHUNK_BYTES=1024 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT -- \
  timeout 300 "$TESTDIR/fused_worker"
if all_ok fused 4 && grep -q "fused checks passed, 0 failed" "$LOG/fused.out.3" &&
  [ "$(cat "$LOG"/fused.* | grep -c 'device puts to 2 ranks of other hosts')" -ge 4 ]; then
  pass "fused_worker on 2 hosts x 2 ranks: $(grep -ho '[0-9]* fused checks passed' "$LOG/fused.out.0"), device puts across hosts"
else
  flunk "fused_worker on 2 hosts x 2 ranks"; show fused
fi

# 2. Each protocol, 1 rank per host, every size class, results checked.
for proto in LL LL128 Simple; do
  launch "perf-$proto" 1 2 NCCL_PROTO=$proto -- timeout 300 "$PERF" allreduce -b 8 -e 8M -f 16 -n 3 -w 1 -c 1
  if all_ok "perf-$proto" 2 && grep -q '^# Out of bounds values : 0 OK$' "$LOG/perf-$proto.out.0"; then
    pass "NCCL_PROTO=$proto across hosts: 8 B .. 8 MiB allreduce correct"
  else
    flunk "NCCL_PROTO=$proto across hosts"; show "perf-$proto"
  fi
done

# 3. Helper threads and several sockets per connection; 4. IPv6 (bootstrap and data).
launch helpers 1 2 NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2 -- \
  timeout 300 "$PERF" allreduce -b 1K -e 32M -f 32 -n 3 -w 1 -c 1
if all_ok helpers 2 && grep -q '^# Out of bounds values : 0 OK$' "$LOG/helpers.out.0"; then
  pass "2 helper threads x 2 sockets per connection: correct up to 32 MiB"
else
  flunk "helper threads"; show helpers
fi
launch ipv6 1 2 NCCL_SOCKET_FAMILY=6 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET -- \
  timeout 300 "$PERF" allreduce -b 8 -e 1M -f 32 -n 3 -w 1 -c 1
if all_ok ipv6 2 && grep -q '^# Out of bounds values : 0 OK$' "$LOG/ipv6.out.0" && grep -q "veth0 \[fd77::" "$LOG/ipv6.out.0"; then
  pass "IPv6: bootstrap and NET over fd77::/64"
else
  flunk "IPv6"; show ipv6
fi

if [[ -n $NET_PLUGIN ]]; then
  used=$(grep -l "NET: using network plugin" "$LOG"/worker.out.* | wc -l)
  if [[ $used == 4 ]] && grep -q "ncclNetPlugin_v" "$LOG/worker.out.0"; then
    pass "every rank carried its NET traffic through the plugin: $(grep -ho 'Initialized .*' "$LOG/worker.out.0" | head -1)"
  else
    flunk "expected all 4 ranks on the network plugin, $used say so"; show worker
  fi
  # An older plugin's interface across the hosts too: the v6-only build (int sizes, no device
  # handles, init without a profiler callback) carries each protocol's sweep.
  V6=$(cd "$TESTDIR/plugins" 2>/dev/null && pwd)/libnccl-net-v6only.so
  for proto in LL LL128 Simple; do
    launch "v6-$proto" 1 2 NCCL_NET_PLUGIN="$V6" NCCL_PROTO=$proto NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET -- \
      timeout 300 "$PERF" allreduce -b 8 -e 8M -f 16 -n 3 -w 1 -c 1
    if all_ok "v6-$proto" 2 && grep -q '^# Out of bounds values : 0 OK$' "$LOG/v6-$proto.out.0" &&
      grep -q "ncclNetPlugin_v6) with 1 device" "$LOG/v6-$proto.out.1"; then
      pass "a v6-only socket plugin across hosts, NCCL_PROTO=$proto: 8 B .. 8 MiB allreduce correct"
    else
      flunk "the v6-only plugin across hosts, NCCL_PROTO=$proto"; show "v6-$proto"
    fi
  done
  # The fault checks read the built-in back-end's own words (peer addresses, severed sockets);
  # NCCL's plugin interface has no call to sever a connection, so they run in the built-in pass.
  echo "SKIP: faults (5.) with --net-plugin: they run in the built-in back-end's pass"
  exit $fail
fi

# 5. Faults. A rank killed mid-run: the survivor's proxy sees the connection end without a goodbye.
launch_kill() {
  launch kill 1 2 BATON_WAIT_TIMEOUT=60 -- "$PERF" allreduce -b 64M -e 64M -n 1000 -w 1 &
  local bg=$! p t0
  ready kill 1 '(elements)'  # rank 0 prints the table's header once every rank is past init
  t0=$(date +%s.%N)
  for p in $(ip netns pids btt-h1); do kill -KILL "$p"; done  # every process on host 1: rank 1
  wait $bg
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f\n", a - b }' >"$LOG/kill.secs"
}
launch_kill
if [[ $(cat "$LOG/kill.rc.0") != 0 ]] && grep -q "rank 1 (10.77.0.2:[0-9]*)\|from 10.77.0.2:\|rank 1 (pid [0-9]* at 10.77.0.2:" "$LOG/kill.out.0" &&
   awk -v s="$(cat "$LOG/kill.secs")" 'BEGIN { exit !(s < 30) }'; then
  pass "rank 1 SIGKILLed: rank 0 exited $(cat "$LOG/kill.secs") s later, naming it: $(grep -o 'rank 1 ([^)]*)[^;]*' "$LOG/kill.out.0" | head -1 | cut -c1-160)"
else
  flunk "rank 1 SIGKILLed: rank 0 should fail naming rank 1 and 10.77.0.2 (rc $(cat "$LOG/kill.rc.0"))"; show kill
fi

# NCCL's recovery recipe across hosts (tests/process/shrink_worker.cc): a rank kills itself mid-run;
# the survivors' operations fail (NET sees the closed connection, shm neighbours time out), they
# revoke, shrink it out with NCCL_SHRINK_ABORT, and run 10 exact allreduces on the child. Rank 0 as
# the victim takes the bootstrap root's process with it: the child makes its own.
for victim in 3 0; do
  launch "shrink$victim" 2 2 BATON_WAIT_TIMEOUT=5 -- timeout 120 "$TESTDIR/shrink_worker" --victim $victim --die-after 3
  ok=1
  for r in 0 1 2 3; do
    [[ $r == "$victim" ]] && continue
    [[ $(cat "$LOG/shrink$victim.rc.$r") == 0 ]] && grep -q "shrank from 4 to 3 ranks.*10 steps after shrink exact" "$LOG/shrink$victim.out.$r" || ok=0
  done
  if ((ok)); then
    pass "rank $victim SIGKILLed: 3 survivors revoked, shrank and ran 10 exact steps ($(grep -ho 'in [0-9.]* s;' "$LOG"/shrink$victim.out.* | tr -d ';' | tr '\n' ' '))"
  else
    flunk "rank $victim SIGKILLed: survivors should shrink and continue"; show "shrink$victim"
  fi
done

# A cut link: TCP reports nothing for minutes, so the watchdog's heartbeats end it within
# BATON_TIMEOUT (the wait timeout is far away).
launch cut 1 2 BATON_TIMEOUT=3 BATON_WAIT_TIMEOUT=120 -- "$PERF" allreduce -b 64M -e 64M -n 1000 -w 1 &
bg=$!
ready cut 1 '(elements)'
t0=$SECONDS
ip -n btt-hub link set h1 down
wait $bg
secs=$((SECONDS - t0))
ip -n btt-hub link set h1 up
if [[ $(cat "$LOG/cut.rc.0") != 0 && $(cat "$LOG/cut.rc.1") != 0 ]] && grep -q "no heartbeat for 3.[0-9] s (BATON_TIMEOUT)" "$LOG/cut.out.0" &&
   grep -q "no heartbeat for 3.[0-9] s (BATON_TIMEOUT)" "$LOG/cut.out.1" && ((secs < 11)); then
  pass "link cut: both ranks named the other unreachable after BATON_TIMEOUT=3 s (run ended $secs s after the cut)"
else
  flunk "link cut: expected both ranks to report no heartbeat (rc $(cat "$LOG/cut.rc.0") $(cat "$LOG/cut.rc.1"), $secs s)"; show cut
fi

# A cut link between 2 hosts x 2 ranks, then agreement: each side sees the other side dead. Only
# the side with rank 0 may go on (half the ranks, with rank 0): it agrees on [2,3], shrinks and runs
# 10 exact collectives; the other side's batonCommGetFailedRanks refuses (a minority cannot tell
# dead ranks from a cut link), so there is no split brain.
launch quorum 2 2 BATON_TIMEOUT=2 BATON_WAIT_TIMEOUT=120 -- timeout 60 "$TESTDIR/fault_worker" --victim -1 --count 300000 &
bg=$!
ready quorum 4 'initialized'
ip -n btt-hub link set h1 down
wait $bg
ip -n btt-hub link set h1 up
if [[ $(cat "$LOG/quorum.rc.0") == 0 && $(cat "$LOG/quorum.rc.1") == 0 ]] &&
   grep -q "agreed failed ranks \[2,3\]" "$LOG/quorum.out.0" && grep -q "recovered: 2 ranks, 10 collectives exact" "$LOG/quorum.out.1" &&
   grep -q "a minority cannot tell" "$LOG/quorum.out.2" && grep -q "a minority cannot tell" "$LOG/quorum.out.3"; then
  pass "link cut, 2+2 ranks: the side with rank 0 agreed on [2,3] and went on; the other side refused (no split brain)"
else
  flunk "link cut, 2+2 ranks: expected ranks 0,1 to shrink and go on and ranks 2,3 to refuse"; show quorum
fi

# An interface that does not exist: named in the error, no hang.
launch ifname 1 2 -- env NCCL_SOCKET_IFNAME=nosuch0 timeout 60 "$PERF" allreduce -b 8 -e 8 -n 1 -w 0
if [[ $(cat "$LOG/ifname.rc.0") != 0 && $(cat "$LOG/ifname.rc.0") != 124 ]] && grep -q "NCCL_SOCKET_IFNAME='nosuch0'" "$LOG/ifname.out.0"; then
  pass "NCCL_SOCKET_IFNAME=nosuch0: $(grep -o "no usable[^;]*nosuch0'" "$LOG/ifname.out.0" | head -1)"
else
  flunk "NCCL_SOCKET_IFNAME=nosuch0 should fail naming it"; show ifname
fi

# An unreachable peer (an unused address of host 0's subnet: ARP gets no answer): the socket
# back-end's connect fails within BATON_BOOTSTRAP_TIMEOUT, naming the address.
out=$(ip netns exec btt-h0 env BATON_TEST_UNREACHABLE=10.77.0.99:9 NCCL_SOCKET_IFNAME=veth0 timeout 60 \
      "$TESTDIR/unit_tests" --gtest_filter='NetSocketErrors.UnreachablePeer*' 2>&1)
if grep -q '^\[       OK \]' <<<"$out" && ! grep -q 'SKIPPED' <<<"$out"; then
  pass "unreachable peer 10.77.0.99: connect failed within BATON_BOOTSTRAP_TIMEOUT ($(grep -o 'Unreachable[A-Za-z]* ([0-9]* ms)' <<<"$out" | grep -o '[0-9]* ms'))"
else
  flunk "unreachable peer"; echo "$out" | tail -20
fi

leaked=$(ls /dev/shm | grep -c '^baton-' || true)
echo "(shared-memory segments named baton-* left in /dev/shm: $leaked)"
exit $fail
