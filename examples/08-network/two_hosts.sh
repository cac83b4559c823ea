#!/usr/bin/env bash
# Lesson 08's demo: two "hosts" on this machine (Linux network namespaces joined by veth pairs and a
# bridge, tests/net/netns.sh), one baton rank on each, an allreduce between them over real TCP.
#
#   sudo examples/08-network/two_hosts.sh [BUILD]        (default BUILD=build)
#
# Each rank gets its own host identity (NCCL_HOSTID), so neither p2p nor shm applies and the NET
# transport carries every step: the rank writes it into a staging FIFO, its proxy thread sends it,
# the peer's proxy lands it in the peer's FIFO. Prints the connection lines of NCCL_DEBUG=INFO, the
# nccl-tests table, and how many bytes each host's veth0 sent. Needs root (ip netns).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
export BATON_NETNS_PREFIX=btdemo
tests/net/netns.sh up 2
trap 'tests/net/netns.sh down' EXIT
txBytes() { ip netns exec btdemo-h"$1" cat /sys/class/net/veth0/statistics/tx_bytes; }
before=($(txBytes 0) $(txBytes 1))
port=$((20000 + RANDOM % 12000))
for r in 0 1; do
  ip netns exec btdemo-h$r env NCCL_HOSTID=host$r BATON_RANK=$r BATON_NRANKS=2 NCCL_COMM_ID=10.77.0.1:$port \
    NCCL_SOCKET_IFNAME=veth0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
    "$BUILD/bin/baton-perf" allreduce -b 8 -e 16M -f 16 -n 5 -w 2 -c 1 >"/tmp/btdemo.$r.log" 2>&1 &
done
wait
grep -hE "NET/Socket : dev|via NET" /tmp/btdemo.0.log | sed 's/^.*NCCL INFO /rank 0: /' | sort -u
grep -vE "NCCL INFO|^$|^hwloc|^cpu |^GPUs|^NVML|^PCI|^socket nets|^libibverbs" /tmp/btdemo.0.log
for h in 0 1; do
  echo "host $h: veth0 sent $(( ($(txBytes $h) - ${before[$h]}) / 1048576 )) MiB"
done
rm -f /tmp/btdemo.0.log /tmp/btdemo.1.log
