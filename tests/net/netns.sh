#!/usr/bin/env bash
# Test "hosts" on one machine: Linux network namespaces joined by a bridge, for NET transport tests
# and tools/scripts/bench-net.sh.
#
#   tests/net/netns.sh [-v] up [N]   make hosts PREFIX-h0 .. PREFIX-h{N-1} (default N=2)
#   tests/net/netns.sh [-v] down     remove everything `up` made (also a half-made or crashed setup)
#   tests/net/netns.sh [-v] check    exit 0 if namespaces can be made here, else say why and exit 77
#   tests/net/netns.sh rsh HOST CMD  run CMD (one shell string, as ssh runs it) on HOST = PREFIX-h<i>
#                                    or 10.77.0.<i+1>: mpirun's rsh launcher agent (plm_rsh_agent)
#
# Host i has interface veth0 with 10.77.0.(i+1)/24 and fd77::(i+1)/64, and lo up. Each veth0's peer
# (named h<i>) sits in the namespace PREFIX-hub on bridge br0, so any host reaches any other and N > 2
# works. PREFIX is $BATON_NETNS_PREFIX, default "bt". Run a program on host i with
# `ip netns exec PREFIX-h<i> PROGRAM`; the filesystem is shared, only the network is separate.
# `up` first removes whatever a previous run left, so running it twice gives the same fresh setup
# (and tears down a setup still in use). Needs root; prints nothing on success unless -v.
# Exit 77 (automake's "skipped") from check and up where namespaces cannot be made.
set -euo pipefail

PREFIX=${BATON_NETNS_PREFIX:-bt}
HUB=$PREFIX-hub
VERBOSE=0

say() { if (( VERBOSE )); then echo "netns.sh: $*"; fi; }
die() { echo "netns.sh: $*" >&2; exit 1; }
usage() { sed -n '2,18s/^# \{0,1\}//p' "$0"; }
run() { say "$*"; "$@"; }

# Prints why namespaces cannot be made here, or nothing when they can.
why_not() {
  if [[ $(id -u) != 0 ]]; then echo "not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"; return; fi
  if ! command -v ip >/dev/null; then echo "'ip' not found (apt-get install -y iproute2)"; return; fi
  local probe=$PREFIX-probe-$$ err
  if ! err=$(ip netns add "$probe" 2>&1); then echo "ip netns add failed: $err"; return; fi
  # veth and bridge may be missing (kernel modules, a restricted container) even where netns works.
  if ! err=$(ip -n "$probe" link add p0 type veth peer name p1 2>&1 &&
             ip -n "$probe" link add b0 type bridge 2>&1); then
    ip netns del "$probe" 2>/dev/null || true
    echo "cannot make veth/bridge devices: $err"
    return
  fi
  ip netns del "$probe"
}

# Our namespaces: PREFIX-hub and PREFIX-h<digits>, whatever N the run that made them had.
ours() {
  ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^${PREFIX//./\\.}-(hub|h[0-9]+)\$" || true
}

down() {
  local ns
  # Deleting a namespace destroys its devices, and a veth pair dies with either end: nothing is left
  # in the root namespace because `up` never creates anything there.
  for ns in $(ours); do run ip netns del "$ns"; done
  # A crash between `ip netns add` and its bind mount can leave a stale name behind.
  for ns in /run/netns/"$PREFIX"-hub /run/netns/"$PREFIX"-h[0-9]*; do
    if [[ -e $ns ]]; then umount "$ns" 2>/dev/null || true; rm -f "$ns"; fi
  done
}

up() {
  local n=$1 i ns
  if [[ ! $n =~ ^[1-9][0-9]*$ ]] || (( n > 250 )); then die "N must be 1..250 (got '$n')"; fi
  down
  run ip netns add "$HUB"
  run ip -n "$HUB" link set lo up
  # No STP and no forwarding delay: ports forward as soon as they are up.
  run ip -n "$HUB" link add br0 type bridge stp_state 0 forward_delay 0
  run ip -n "$HUB" link set br0 up
  for (( i = 0; i < n; i++ )); do
    ns=$PREFIX-h$i
    run ip netns add "$ns"
    # Both ends are made directly inside their namespaces, so a crash never leaves a veth in the
    # root namespace to collide with the next run.
    run ip -n "$ns" link add veth0 type veth peer name "h$i" netns "$HUB"
    run ip -n "$HUB" link set "h$i" master br0
    run ip -n "$HUB" link set "h$i" up
    run ip -n "$ns" link set lo up
    run ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev veth0
    # nodad: the address is usable at once instead of "tentative" for about a second.
    run ip -n "$ns" addr add "fd77::$((i + 1))/64" dev veth0 nodad
    run ip -n "$ns" link set veth0 up
  done
  say "up: $n hosts ${PREFIX}-h0..${PREFIX}-h$((n - 1)), 10.77.0.1..10.77.0.$n and fd77::1..fd77::$(printf '%x' "$n") on veth0"
}

# ssh's contract: the host, then the words of a command for the remote shell. ip netns exec runs a
# program, not a shell string, hence sh -c. Exit 255, as ssh does, when the host is unknown.
rsh() {
  local host=$1 ns
  shift
  case $host in
    10.77.0.*) ns=$PREFIX-h$(( ${host##*.} - 1 )) ;;
    *) ns=$host ;;
  esac
  ours | grep -qxF "$ns" || { echo "netns.sh rsh: no host '$host' (namespace $ns is not up)" >&2; exit 255; }
  exec ip netns exec "$ns" /bin/sh -c "$*"
}

while (( $# )); do
  case $1 in
    -v) VERBOSE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) break ;;
  esac
done
cmd=${1:-}
case $cmd in
  up|check)
    max=1; if [[ $cmd == up ]]; then max=2; fi
    (( $# <= max )) || { usage >&2; die "too many arguments"; }
    reason=$(why_not)
    if [[ -n $reason ]]; then echo "netns.sh: cannot make network namespaces: $reason" >&2; exit 77; fi
    if [[ $cmd == up ]]; then up "${2:-2}"; else say "check: ok"; fi ;;
  rsh)
    (( $# >= 3 )) || { usage >&2; die "rsh needs a host and a command"; }
    shift
    rsh "$@" ;;
  down)
    (( $# == 1 )) || { usage >&2; die "too many arguments"; }
    [[ $(id -u) == 0 ]] || die "down needs root"
    down ;;
  *) usage >&2; exit 2 ;;
esac
