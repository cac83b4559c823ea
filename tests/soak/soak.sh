#!/usr/bin/env bash
# The soak (make soak): tests/process/soak_worker's random collectives, every result checked, for a
# set time on 4 local processes and then on two namespaced hosts x 2 ranks (tests/net/netns.sh:
# shared memory within a host, the NET transport between them). Passes when every rank finished
# with no wrong result, its resident memory grew by at most RSS_BOUND_KIB (default 16384: 16 MiB)
# from a third of the time to the end (connections and buffers made on first use exist by then),
# its open descriptors did not grow, and afterwards no baton segment is left in /dev/shm and no
# worker process is alive.
#
#   tests/soak/soak.sh BINDIR TESTDIR SECONDS [local|hosts|both]     (make soak SOAK_SECONDS=1800)
set -uo pipefail
BIN=${1:?usage: soak.sh BINDIR TESTDIR SECONDS [local|hosts|both]}
TESTDIR=${2:?usage}
SECONDS_EACH=${3:?usage}
WHERE=${4:-both}
HERE=$(cd "$(dirname "$0")" && pwd)
NET=$HERE/../net
RSS_BOUND_KIB=${RSS_BOUND_KIB:-16384}
LOG=$(mktemp -d /tmp/baton-soak.XXXXXX)
export BATON_NETNS_PREFIX=btt BATON_TUNING_FILE=${BATON_TUNING_FILE:-none}
fail=0
shmList() { find /dev/shm -maxdepth 1 -name 'baton-*' -printf '%f\n' 2>/dev/null | sort; }

# judge NAME N: each rank's report line, its bounds, then what is left behind.
judge() {
  local name=$1 n=$2 r line
  for ((r = 0; r < n; r++)); do
    line=$(grep -h "^rank $r: soak" "$LOG/$name.out.$r" 2>/dev/null)
    if [[ -z $line || $(cat "$LOG/$name.rc.$r" 2>/dev/null) != 0 ]]; then
      echo "FAIL: $name rank $r (exit $(cat "$LOG/$name.rc.$r" 2>/dev/null)):"
      tail -n 5 "$LOG/$name.out.$r" | sed 's/^/    | /'
      fail=1
      continue
    fi
    echo "$name: $line"
    # "RSS A -> B KiB; fds C -> D"
    read -r a b c d < <(sed -E 's/.*RSS ([0-9]+) -> ([0-9]+) KiB; fds ([0-9]+) -> ([0-9]+).*/\1 \2 \3 \4/' <<<"$line")
    if ((b - a > RSS_BOUND_KIB)); then echo "FAIL: $name rank $r: RSS grew by $((b - a)) KiB (bound $RSS_BOUND_KIB)"; fail=1; fi
    if ((d > c)); then echo "FAIL: $name rank $r: open descriptors grew from $c to $d"; fail=1; fi
  done
  sleep 1
  local left
  left=$(comm -13 "$LOG/shm.before" <(shmList))
  if [[ -n $left ]]; then echo "FAIL: $name left shared-memory segments: $left"; fail=1; fi
  if pgrep -f "$TESTDIR/soak_worker" >/dev/null; then echo "FAIL: $name left worker processes"; fail=1; fi
}

if [[ $WHERE == local || $WHERE == both ]]; then
  shmList >"$LOG/shm.before"
  echo "soak: 4 processes on this host, $SECONDS_EACH s"
  "$BIN/baton-run" -n 4 "$TESTDIR/soak_worker" --seconds "$SECONDS_EACH" >"$LOG/local.run" 2>&1
  rc=$?
  for r in 0 1 2 3; do  # baton-run prefixes each rank's lines with "[r] "
    sed -n "s/^\[$r\] //p" "$LOG/local.run" >"$LOG/local.out.$r"
    echo $rc >"$LOG/local.rc.$r"
  done
  judge local 4
fi

if [[ $WHERE == hosts || $WHERE == both ]]; then
  if ! reason=$("$NET/netns.sh" check 2>&1); then
    echo "SKIP: namespaced hosts: $reason"
  else
    "$NET/netns.sh" up 2 || { echo "FAIL: netns.sh up"; exit 1; }
    trap '"$NET/netns.sh" down; rm -rf "$LOG"' EXIT
    source "$NET/launch.sh"
    shmList >"$LOG/shm.before"
    echo "soak: 2 namespaced hosts x 2 ranks, $SECONDS_EACH s"
    launch hosts 2 2 -- "$TESTDIR/soak_worker" --seconds "$SECONDS_EACH"
    judge hosts 4
  fi
fi
[[ $WHERE == hosts || $WHERE == both ]] || rm -rf "$LOG"
if ((fail)); then echo "soak: FAILED"; exit 1; fi
echo "soak: passed"
