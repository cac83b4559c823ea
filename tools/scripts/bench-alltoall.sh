#!/usr/bin/env bash
# Lesson 12: the AlltoAll algorithms between two "hosts" (network namespaces, tests/net/netns.sh),
# PER ranks on each, the NET transport (sockets) between them: where each NET message's fixed cost
# makes Bruck's log2 n rounds beat direct's n-1 messages per rank.
#
#   tools/scripts/bench-alltoall.sh [--per 4] [BATON-PERF ARGS...]
#   tools/scripts/bench-alltoall.sh [--per 4] --calibrate [-n 20 ...]
#   tools/scripts/bench-alltoall.sh [--per 2] --moe [BATON-PERF MOE ARGS...]   (baton-perf moe instead)
#
# Defaults: --per 4 (8 ranks), baton-perf's arguments -b 64 -e 1M -f 4 -n 20 -w 5 --compare
# direct,pairwise,bruck,a2a-auto, each kept unless you give that flag. Prints baton-perf's table (rank 0). With --calibrate, baton-perf
# times direct against Bruck and writes the Bruck threshold for this rank count into the tuning file
# (BATON_TUNING_FILE, else ~/.cache/baton/tuning.txt); otherwise only a BATON_TUNING_FILE you set is
# read (so auto runs with what a calibration wrote). Brings the
# hosts up (prefix ba) and removes them on exit. Needs root; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
PER=4
OP=alltoall
ARGS=()
while (($#)); do
  case $1 in
    --per) PER=$2; shift 2 ;;
    --moe) OP=moe; shift ;;
    -h|--help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
# Each default stays unless its flag is given: `-n 5` alone still compares the four algorithms.
if [[ $OP != moe ]]; then
  has() { local a; for a in ${ARGS[@]+"${ARGS[@]}"}; do for f in "$@"; do [[ $a == "$f" || $a == "$f="* ]] && return 0; done; done; return 1; }
  defaults=()
  has -b --minbytes || defaults+=(-b 64)
  has -e --maxbytes || defaults+=(-e 1M)
  has -f --stepfactor || defaults+=(-f 4)
  has -n --iters || defaults+=(-n 20)
  has -w --warmup_iters || defaults+=(-w 5)
  has --compare --calibrate || defaults+=(--compare direct,pairwise,bruck,a2a-auto)
  ARGS=(${defaults[@]+"${defaults[@]}"} ${ARGS[@]+"${ARGS[@]}"})
fi
TUNING=${BATON_TUNING_FILE:-none}
for a in ${ARGS[@]+"${ARGS[@]}"}; do
  [[ $a == --calibrate ]] && TUNING=${BATON_TUNING_FILE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/tuning.txt}
done
export BATON_NETNS_PREFIX=ba
NETNS=tests/net/netns.sh
if ! reason=$("$NETNS" check 2>&1); then echo "bench-alltoall.sh: cannot make hosts here: $reason" >&2; exit 77; fi
"$NETNS" up 2
trap '"$NETNS" down' EXIT
PORT=$((20000 + RANDOM % 12000))
LOG=$(mktemp -d /tmp/baton-bench-alltoall.XXXXXX)
n=$((2 * PER)) pids=()
for ((r = 0; r < n; r++)); do
  h=$((r / PER))
  ip netns exec ba-h$h env NCCL_HOSTID=ba-h$h BATON_RANK=$r BATON_NRANKS=$n BATON_LOCAL_RANK=$((r % PER)) \
    NCCL_COMM_ID=10.77.0.1:$PORT NCCL_SOCKET_IFNAME=veth0 BATON_TUNING_FILE="$TUNING" \
    build/bin/baton-perf $OP ${ARGS[@]+"${ARGS[@]}"} >"$LOG/out.$r" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "# 2 hosts x $PER ranks, NET (sockets) between the hosts, shared memory within each"
cat "$LOG/out.0"
((rc == 0)) || { echo "bench-alltoall.sh: a rank failed:"; tail -n 5 "$LOG/out.1"; }
rm -rf "$LOG"
exit $rc
