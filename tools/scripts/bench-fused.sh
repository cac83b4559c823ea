#!/usr/bin/env bash
# Lesson 11's slowed link: the fused operations' stages between two "hosts" (network namespaces,
# tests/net/netns.sh), one rank per host, each pinned to its own core, their link limited by a
# token bucket (tc tbf; netem is not in this kernel) so the transfer costs wall time but no CPU,
# as a network does: what the decomposed, fused and optimized stages can hide behind the GEMM.
#
#   tools/scripts/bench-fused.sh [--rate 1gbit] [--op ag_gemm] [--no-pin] [BATON-PERF ARGS...]
#   tools/scripts/bench-fused.sh [--rate 1gbit] --wire mxfp8,mxfp4,nvfp4 [BATON-PERF ARGS...]
#
# --wire: lesson 15's wire formats instead (baton-perf --wire), over the same slowed link.
# Defaults: --op ag_gemm, baton-perf's arguments -M 1024,2048 -N 256 -K 1024 -n 3 -w 1 -r 3
# (about as long on the link as in the GEMM at 1 gbit). Prints baton-perf's table (rank 0): the GEMMs
# alone, the collective alone over the slowed link, and every stage, with best/naive. Brings the
# hosts up (prefix bf) and removes them on exit. Needs root; run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=1gbit OP=ag_gemm PIN=1
ARGS=()
while (($#)); do
  case $1 in
    --rate) RATE=$2; shift 2 ;;
    --op) OP=$2; shift 2 ;;
    --wire) OP=--wire; ARGS=("$2" "${ARGS[@]}"); shift 2 ;;
    --no-pin) PIN=0; shift ;;
    -h|--help) sed -n '2,16s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
((${#ARGS[@]})) || ARGS=(-M 1024,2048 -N 256 -K 1024 -n 3 -w 1 -r 3)
[[ $OP == --wire ]] && ((${#ARGS[@]} == 1)) && ARGS+=(-b 4M -e 64M -f 4 -n 2 -w 1 -r 3)
export BATON_NETNS_PREFIX=bf
NETNS=tests/net/netns.sh
if ! reason=$("$NETNS" check 2>&1); then echo "bench-fused.sh: cannot make hosts here: $reason" >&2; exit 77; fi
"$NETNS" up 2
trap '"$NETNS" down' EXIT
for h in 0 1; do ip netns exec bf-h$h tc qdisc add dev veth0 root tbf rate "$RATE" burst 256kb latency 100ms; done
PORT=$((20000 + RANDOM % 12000))
LOG=$(mktemp -d /tmp/baton-bench-fused.XXXXXX)
pids=()
for r in 0 1; do
  pin=()
  ((PIN)) && pin=(taskset -c $r)
  ip netns exec bf-h$r env NCCL_HOSTID=bf-h$r BATON_RANK=$r BATON_NRANKS=2 BATON_LOCAL_RANK=0 \
    NCCL_COMM_ID=10.77.0.1:$PORT NCCL_SOCKET_IFNAME=veth0 BATON_TUNING_FILE=none \
    "${pin[@]}" build/bin/baton-perf "$OP" "${ARGS[@]}" >"$LOG/out.$r" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "# link: tc tbf rate $RATE on each host's veth0; $( ((PIN)) && echo "rank r pinned to core r" || echo "not pinned")"
cat "$LOG/out.0"
((rc == 0)) || { echo "bench-fused.sh: a rank failed:"; tail -n 5 "$LOG/out.1"; }
rm -rf "$LOG"
exit $rc
