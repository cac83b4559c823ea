#!/usr/bin/env bash
# Runs each lesson's program (docs/lessons/NN-*.md) and checks the lines the lesson tells you to expect.
set -euo pipefail
BUILD=${1:-build}
EX=$BUILD/bin/examples
fail=0
expect() {  # expect PATTERN OUTPUT
  if ! grep -qE -- "$1" <<<"$2"; then echo "missing expected line: $1"; fail=1; fi
}
out=$("$EX/01-naive-allreduce/naive_allreduce" 4 8); echo "$out"
expect '^naive allreduce: 4 ranks, 8 MiB: .* result OK$' "$out"
expect '^bytes through rank 0: 48 MiB, through each other rank: 16 MiB$' "$out"

out=$("$EX/02-ring-allreduce/ring_allreduce" 4 8); echo "$out"
expect '^naive allreduce: 4 ranks, 8 MiB: .*result OK$' "$out"
expect '^ring  allreduce: 4 ranks, 8 MiB: .*result OK$' "$out"
expect '^per-rank bytes sent: ring 12.00 MiB each; naive 24.00 MiB at rank 0$' "$out"

out=$("$EX/03-pipelining/pipelining" 4 16); echo "$out"
expect 'stop-and-wait .* result OK$' "$out"
expect 'pipelined \(8 slots in flight\), +512 KiB steps: .* result OK$' "$out"
BIN=$BUILD/bin
# Lesson 04: the three protocols side by side, every result checked.
out=$("$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 1M -f 32 -n 3 -w 1 --compare LL,LL128,Simple); echo "$out"
expect '^#   LL +NCCL_PROTO=LL$' "$out"
expect '^#   LL128 +NCCL_PROTO=LL128$' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# Lesson 04's small messages: 512 B takes the Simple one-shot, and the ring with it switched off.
out=$(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 512 -e 512 -n 3 -w 1); echo "$out" | tail -n 3
expect 'count 128 datatype float op sum root 0 .* algorithm OneShot protocol Simple channels 1' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
out=$(BATON_ONESHOT_SIMPLE_BYTES=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 512 -e 512 -n 3 -w 1)
expect 'count 128 datatype float op sum root 0 .* algorithm Ring protocol' "$out"
# Lesson 04's breakdown of the 8-byte AllReduce: every piece timed, in one run.
out=$("$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-latency" --breakdown -n 200 -w 20 -s 3); echo "$out"
for piece in allreduce line-handoff call-without-peer rest; do
  expect "^breakdown $piece +-?[0-9]+\.[0-9]{3}$" "$out"
done

# Lesson 05: calibration writes a tuning file, the explain table reads it, the trace shows steps.
tmp=$(mktemp -d)
out=$(BATON_TUNING_FILE=$tmp/tuning.txt "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce --calibrate -b 8 -e 256K -f 8 -n 3 -w 1); echo "$out"
expect '^# the model.s pick is within 10% of the fastest measured pair at [0-9]+ of 6 sizes$' "$out"
expect "^# wrote the 'shm' table \\(Ring and Tree\\) of $tmp/tuning.txt" "$out"
out=$(BATON_TUNING_FILE=$tmp/tuning.txt "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce --explain -b 16 -e 1M -f 16); echo "$out"
expect "^# tuner: allreduce over 2 ranks, 'shm' table, model from $tmp/tuning.txt$" "$out"
expect '^ +1048576( +[0-9.]+){6} +(Ring|Tree)/(LL|LL128|Simple)$' "$out"
BATON_TRACE=$tmp/trace.json NCCL_PROTO=Simple "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8M -e 8M -n 1 -w 0 >/dev/null
for rank in 0 1; do expect "\"name\":\"rank $rank\"" "$(cat "$tmp/trace.json")"; done
expect '"name":"recvReduceCopySend","cat":"step"' "$(cat "$tmp/trace.json")"
expect '"name":"AllReduce 8388608 B Ring/Simple","cat":"op"' "$(cat "$tmp/trace.json")"
python3 -m json.tool "$tmp/trace.json" >/dev/null || { echo "BATON_TRACE's file is not valid JSON"; fail=1; }

# Lesson 06: discovery, a loaded machine's paths and rings, the library's own dump reloaded, the simulator.
out=$("$BIN/baton-topo"); echo "$out"
expect '^# topology: hwloc discovery of this machine, 1 host' "$out"
expect '^channel  0 ring: 0 1 ' "$out"
out=$("$BIN/baton-topo" --topo tests/topo/fixtures/dgx-h100.xml); echo "$out" | head -30
expect '^ +0 +LOC/5000.0( +NVL/370.8){7}$' "$out"
out=$("$BIN/baton-topo" --topo tests/topo/fixtures/two-socket.xml --no-paths --dot "$tmp/two.dot"); echo "$out"
expect '^channel  0 ring: 0 1 2 3 4 5 6 7 +\(10.0 GB/s, worst hop SYS\)$' "$out"
expect 'graph topology' "$(cat "$tmp/two.dot")"
NCCL_TOPO_DUMP_FILE=$tmp/me.xml "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 8 -n 1 -w 0 >/dev/null
out=$("$BIN/baton-topo" --topo "$tmp/me.xml"); echo "$out" | head -3
expect "^# topology: $tmp/me.xml, 1 host" "$out"
out=$("$BIN/baton-topo" --topo tests/topo/fixtures/dgx-h100.xml --simulate allreduce -b 1M -e 1G -f 32); echo "$out"
expect '^ +1073741824 +268435456 +float +sum +-1 +[0-9.]+ +[0-9.]+ +3[0-9][0-9]\.[0-9]+ +Ring +(LL128|Simple)$' "$out"

# Lesson 07: the double binary tree over 8 nodes, and tree AllReduce checked in every protocol.
out=$("$BIN/baton-topo" --nodes 8 --ranks 1 --channels 2 --no-paths --dot-trees "$tmp/dbtree.dot"); echo "$out"
expect '^channel  0 tree 0: 0->4 2->1,3 4->2,6 6->5,7 +\(root 0\)$' "$out"
expect '^channel  1 tree 1: 1->2,0 3->5,1 5->6,4 7->3 +\(root 7\)$' "$out"
out=$(BATON_RANKS_PER_NODE=1 "$BIN/baton-run" -n 4 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 1M -f 32 -n 2 -w 1 --compare ring-LL128,tree-LL,tree-LL128,tree-Simple,tuned); echo "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
out=$(BATON_RANKS_PER_NODE=1 "$BIN/baton-perf" allreduce -t 8 -b 8 -e 8 --explain); echo "$out"
expect '^ +8( +[0-9.]+){6} +Tree/' "$out"
rm -rf "$tmp"
# Lesson 08: two namespaced hosts, one rank each, every step over NET (needs root and veth).
if reason=$(tests/net/netns.sh check 2>&1); then
  out=$(examples/08-network/two_hosts.sh "$BUILD"); echo "$out"
  expect '^rank 0: Channel 00/[0-9]+ : 0\[0\] -> 1\[0\] via NET$' "$out"
  expect '^rank 0: NET/Socket : dev 0 veth0 10\.77\.0\.1:0$' "$out"
  expect '^# Out of bounds values : 0 OK$' "$out"
  expect '^host 1: veth0 sent [0-9]+ MiB$' "$out"
else
  echo "SKIP: lesson 08 (two namespaced hosts): $reason"
fi
# Lesson 09: plain, registered and window buffers between two processes, and the sweep that compares them.
out=$("$EX/09-buffer-registration/registration" 16); echo "$out"
for kind in plain registered window; do
  expect "^$kind +16 MiB: +[0-9.]+ ms +busbw +[0-9.]+ GB/s +8 B: +[0-9.]+ us +result OK$" "$out"
done
out=$(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC,INIT "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 4M -f 64 -n 3 -w 1 --compare fifo,plain,registered,window 2>&1); echo "$out" | grep -v INFO
expect '^#   fifo +BATON_SINGLE_COPY=0 -R 0$' "$out"
expect 'single copy \(cross-memory attach\) with 1 of 1 peer ranks|no single copy to rank 1' "$out"
expect '^#   registered +-R 1$' "$out"
expect '^#   window +-R 2$' "$out"
expect "mapped process [0-9]+'s ncclMemAlloc allocation" "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# Lesson 09's NET zero copy: registered send/recv buffers, only NET between the two processes.
out=$(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo BATON_TEST_MEMORY=registered NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=NET "$BIN/baton-run" -n 2 "$BUILD/tests/rank_worker" 2>&1); echo "$out" | grep -E 'zero copy|checks'
expect 'NET: rank 0 sent [0-9]+ steps to rank 1 zero copy \(from registered user buffers\)$' "$out"
expect 'NET: rank 0 received [0-9]+ steps from rank 1 zero copy \(into registered user buffers\), [0-9]+ more through the FIFO' "$out"
expect 'rank 1: [0-9]+ checks passed' "$out"
# ... and the ring's Simple steps of a registered AllGather.
out=$(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_PROTO=Simple NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=COLL,NET "$BIN/baton-run" -n 2 "$BIN/baton-perf" allgather -R 1 -b 4M -e 4M -n 5 -w 1 -c 1 2>&1)
echo "$out" | grep -E 'AllGather: opCount 1 |NET: rank 0 (sent|received)|Out of bounds'
expect 'AllGather: opCount 1 .*algorithm Ring protocol Simple channels [0-9]+ NET zero copy$' "$out"
expect 'NET: rank 0 sent [0-9]+ steps to rank 1 zero copy \(from registered user buffers\)$' "$out"
expect '^\[0\] # Out of bounds values : 0 OK$' "$out"

# Lesson 10: the elastic loop: a rank killed, the survivors agree, shrink and retry the step with
# their gradients restored; a newcomer joins with ncclCommGrow; every rank's weights are exact.
out=$(examples/10-fault-tolerance/elastic.sh "$BIN"); echo "$out"
expect '^rank 0: step (9|1[0-9]) failed \(remote process exited or there was a network error\); gradient restored$' "$out"
expect '^rank 0: ranks \[2\] failed; survivors agreed and shrank to 3 ranks \(now rank 0\)' "$out"
expect '^step 20: admitted a new rank: 4 ranks$' "$out"
for who in 0 1 3 103; do expect "^rank $who: done after 30 steps: w\[0\] = ([0-9]+), expected \\1: OK$" "$out"; done

# Lesson 11: the fused operations' stages timed beside the GEMMs and the collective alone, every
# stage equal to the naive one bit for bit; the 8xH100 prediction beside the published figures.
out=$("$BIN/baton-perf" ag_gemm -t 2 -M 256,1024 -N 64 -K 512 -n 2 -r 1); echo "$out"
expect '^#        M     gemm\(us\)     comm\(us\)    naive\(us\) decomposed\(us\)    fused\(us\) optimized\(us\) best/naive  overlap    GFLOP/s  wrong$' "$out"
for m in 256 1024; do expect "^ +$m( +[0-9.]+){7} +-?[0-9]+% +[0-9.]+ +0$" "$out"; done
# The timeline as text: one rank's fused spans from a BATON_TRACE file (thread ranks here; the
# lesson's run is over the slowed link, as root).
trace=$(mktemp /tmp/baton-lesson11.XXXXXX)
BATON_TRACE=$trace "$BIN/baton-perf" ag_gemm -t 2 -M 256 -N 64 -K 512 -n 1 -w 0 -r 1 --compare optimized >/dev/null
out=$(tools/scripts/trace-spans.py "$trace" --cat fused,op --from-last "gemm rows of rank 0"); echo "$out"
rm -f "$trace"
expect '^ start ms       ms  lane           name$' "$out"
expect '^ +0\.000 +[0-9.]+  host +gemm rows of rank 0$' "$out"
expect ' +host +gemm rows of rank 1$' "$out"
out=$("$EX/11-device-api/own_kernel"); echo "$out"
expect '^2 ranks \(LSA team of 2\), 65536 floats: own kernel +[0-9.]+ us, ncclAllReduce +[0-9.]+ us   result OK$' "$out"
out=$("$BIN/baton-topo" --topo tests/topo/fixtures/dgx-h100.xml --simulate ag_gemm); echo "$out"
expect '^ +4096 +1792 +4096 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +0\.[0-9]+$' "$out"
expect '^# published \(yifuwang/symm-mem-recipes' "$out"

# Lesson 12: the AlltoAll algorithms side by side (every result checked), and MoE tokens routed with
# a counts exchange and an AlltoAllv, on the default algorithm and on Bruck.
out=$("$BIN/baton-perf" alltoall -t 4 -b 64 -e 64 -n 2 -w 1 --compare direct,pairwise,bruck,a2a-window); echo "$out"
expect '^#   bruck +BATON_ALLTOALL_ALGO=bruck$' "$out"
expect '^#   a2a-window +BATON_ALLTOALL_ALGO=window -R 2$' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# --explain: the choice and its rule per size; two "nodes" of 2 thread ranks make Bruck the small sizes'.
out=$(BATON_RANKS_PER_NODE=2 "$BIN/baton-perf" alltoall -t 4 --explain -b 64 -e 1M -f 16); echo "$out"
expect '^# tuner: alltoall over 4 ranks, Bruck threshold 65536 bytes \(built-in\)' "$out"
expect '^ +1024 +256 +bruck +across hosts, buffer <= the Bruck threshold' "$out"
expect '^ +262144 +65536 +direct +across hosts, buffer > the Bruck threshold' "$out"
# --calibrate: direct against Bruck per size, the threshold written to the tuning file and read back.
out=$(BATON_TUNING_FILE=$tmp/a2a-tuning.txt BATON_RANKS_PER_NODE=2 "$BIN/baton-perf" alltoall -t 4 --calibrate -e 64K -n 2 -w 1); echo "$out"
expect '^# alltoall calibration: 4 ranks on 2 hosts, direct against Bruck per size$' "$out"
expect "^# wrote 'alltoall 4 bruck_bytes [0-9]+' to $tmp/a2a-tuning.txt" "$out"
out=$(BATON_TUNING_FILE=$tmp/a2a-tuning.txt BATON_RANKS_PER_NODE=2 "$BIN/baton-perf" alltoall -t 4 --explain -b 64 -e 64); echo "$out"
expect "^# tuner: alltoall over 4 ranks, Bruck threshold [0-9]+ bytes \\($tmp/a2a-tuning.txt\\)" "$out"
for algo in auto bruck; do
  out=$(BATON_ALLTOALL_ALGO=$algo "$EX/12-moe-all-to-all/token_routing" 4 64); echo "$out"
  expect '^token routing: 4 ranks, 64 tokens each, top-2 of 8 experts: 474 token copies delivered in [0-9.]+ us, result OK$' "$out"
  expect '^rank 0 received 29 30 29 29 tokens \(from ranks 0..3\)$' "$out"
done
# Lesson 12: MoE dispatch and combine per stage, every stage's rows and output equal to the first's.
out=$("$BIN/baton-perf" moe -t 2 -T 16,64 --hidden 256 -k 4 -n 2 -w 1 -r 1); echo "$out"
expect '^# tokens +naive disp/comb/both +alltoallv disp/comb/both +normal disp/comb/both +lowlatency disp/comb/both +MB +bound\(us\) +x bound +wrong$' "$out"
for t in 16 64; do expect "^ +$t( +[0-9.]+/ *[0-9.]+/ *[0-9.]+){4} +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" "$out"; done
# Dispatch with the experts' GEMM, per source as rows land (lowlatency) and after all are in.
out=$("$BIN/baton-perf" moe -t 2 -T 64 --hidden 256 -k 4 --ffn 32 -n 2 -w 1 -r 1 --compare normal,lowlatency:serial,lowlatency); echo "$out"
expect '^# tokens +normal disp/comb/both lowlatency:serial disp/comb/both +lowlatency disp/comb/both' "$out"
expect "^ +64( +[0-9.]+/ *[0-9.]+/ *[0-9.]+){3} +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" "$out"
# The same with FP8 dispatch: every stage receives the same e4m3 bytes and scales.
out=$("$BIN/baton-perf" moe -t 2 -T 64 --hidden 256 -k 4 -n 2 -w 1 -r 1 --fp8); echo "$out"
expect '^# baton-perf moe, bfloat16 \(dispatch in fp8 e4m3\), 2 ranks' "$out"
expect "^ +64( +[0-9.]+/ *[0-9.]+/ *[0-9.]+){4} +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" "$out"
# Lesson 14: a rank skips a collective; the ranks' dumps name it. Then a clean run: no fault, exit 0.
dumps=$(mktemp -d)
out=$(BATON_WAIT_TIMEOUT=3 BATON_DUMP_DIR=$dumps BATON_DUMP_SIGNAL=SIGUSR1 "$BIN/baton-run" -n 4 \
  "$EX/14-debugging-hangs/stuck_job" skip 2 2>&1 || true); echo "$out"
expect '^\[[013]\] rank [013]: step 5 failed: AllGather: rank [013] channel 0 timed out \(BATON_WAIT_TIMEOUT\)' "$out"
expect '^baton-run: asking 1 remaining rank\(s\) for a dump \(SIGUSR1\)$' "$out"
out=$("$BIN/baton-doctor" "$dumps" || true); echo "$out"
expect '^ +2 +[^ ]+ +[0-9]+ +signal +AllReduce #4 +done +-$' "$out"
expect '^  FAULT: rank 2 never called AllGather #5; its last operation is AllReduce #4, completed' "$out"
rm -rf "$dumps"
dumps=$(mktemp -d)
BATON_DUMP_DIR=$dumps "$BIN/baton-run" -n 4 "$EX/14-debugging-hangs/stuck_job" none >/dev/null
out=$("$BIN/baton-doctor" "$dumps"); echo "$out"
expect '^  no fault found$' "$out"
rm -rf "$dumps"
# The RAS service while the job hangs: rank 2 launched one AllGather fewer, and rank 3 waits for it.
rasport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
NCCL_RAS_ADDR=127.0.0.1:$rasport BATON_WAIT_TIMEOUT=20 "$BIN/baton-run" -n 4 "$EX/14-debugging-hangs/stuck_job" skip 2 \
  >/dev/null 2>&1 &
stuck=$!
for i in $(seq 60); do
  out=$(NCCL_RAS_ADDR=127.0.0.1:$rasport "$BIN/baton-ras" 2>&1) && [[ $out == *"STALLED"*"rank 2 for"* ]] && break
  sleep 0.2
done
echo "$out"
kill "$stuck"; wait "$stuck" 2>/dev/null || true  # baton-run ends its ranks and exits 143
expect '^  1 rank has launched up to operation 2$' "$out"
expect '^  Rank 2 -- process [0-9]+ on node .*; last collective AllReduce #4, done$' "$out"
expect '^  Rank 3 waits for data from rank 2 for [0-9.]+ s, in AllGather #5$' "$out"
# BATON_CHECK_MODE=debug: the count mismatch fails every rank at once, naming both sides.
out=$(BATON_CHECK_MODE=debug "$BIN/baton-run" -n 4 "$EX/14-debugging-hangs/stuck_job" count 2 2>&1 || true); echo "$out"
expect "^\[0\] rank 0: step 5 failed: AllGather #5: rank 2's arguments differ from this rank's \(rank 0\): count 65535 against 65536 \(BATON_CHECK_MODE=debug\)$" "$out"
expect "^\[2\] rank 2: step 5 failed: AllGather #5: rank 0's arguments differ from this rank's \(rank 2\): count 65536 against 65535 \(BATON_CHECK_MODE=debug\)$" "$out"
# Lesson 15: one block through each wire format, then AllReduce with each, errors against the exact sum.
out=$("$EX/15-wire-formats/wire_formats"); echo "$out"
expect '^mxfp8: 48 bytes for 32 floats \(128 bytes\); block scale 2\^-2 \(e8m0 byte 0x7d\); max error 0.09 = 0.0009 of the block.s max$' "$out"
expect '^mxfp4: 32 bytes for 32 floats \(128 bytes\); block scale 2\^4 \(e8m0 byte 0x83\); max error 3.93 = 0.0409 of the block.s max$' "$out"
expect '^nvfp4: 32 bytes for 32 floats \(128 bytes\); segment scale 0.0357143, block scales 448 20 \(e4m3\)' "$out"
expect '^  decoded: +-8.00 +0.00 +-0.00 +0.00 +-0.00 +-96.00 +2.14 +-1.07 +4.29 +0.71 +-2.86 +2.86$' "$out"
expect '^allreduce of 65536 floats over 4 ranks as mxfp8: 1.03 bytes per element on the wire, max error 0.0286, RMS error 0.0253 .* every rank the same: yes$' "$out"
expect '^allreduce of 65536 floats over 4 ranks as mxfp4: 0.53 bytes per element on the wire, .* every rank the same: yes$' "$out"
expect '^allreduce of 65536 floats over 4 ranks as nvfp4: 0.56 bytes per element on the wire, .* every rank the same: yes$' "$out"
# baton-perf --wire between 2 processes: the plain row and one per format, their errors in range.
out=$("$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" --wire mxfp8,mxfp4,nvfp4 -b 64K -e 1M -f 16 -n 2 -w 1 -r 1); echo "$out"
expect '^# +size\(B\) +count +wire +time\(us\) +algbw +busbw +wire busbw +x none +maxerr +rmserr$' "$out"
expect '^ +1048576 +524288 +none( +[0-9.]+){5} +[0-9.]+e-03 +[0-9.]+e-03$' "$out"
expect '^ +1048576 +524288 +mxfp8( +[0-9.]+){5} +[0-9.]+e-02 +[0-9.]+e-02$' "$out"
expect '^ +1048576 +524288 +mxfp4( +[0-9.]+){5} +[0-9.]+e-01 +[0-9.]+e-01$' "$out"
expect '^ +1048576 +524288 +nvfp4( +[0-9.]+){5} +[0-9.]+e-01 +[0-9.]+e-01$' "$out"
# ... and the fused stage (the codecs inside the point-to-point copy loop), named in each call's COLL line.
out=$(BATON_LOWP_STAGE=fused NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" \
  --wire mxfp8 -b 1M -e 1M -n 1 -w 0 -r 1 2>&1); echo "$out" | grep -m 3 -E "stage fused|^ +1048576"
expect 'NCCL INFO batonAllReduceWire: 524288 bfloat16 elements as mxfp8 \(540672 bytes per segment\), stage fused, algorithm rsag, 2 ranks$' "$out"
expect '^ +1048576 +524288 +mxfp8( +[0-9.]+){5} +[0-9.]+e-02 +[0-9.]+e-02$' "$out"
# Lesson 16: a tuner plugin in C steers baton's choice; --explain shows its pick beside baton's.
out=$(NCCL_TUNER_PLUGIN=$BUILD/tests/plugins/libnccl-tuner-rules.so NCCL_TUNER_CONFIG_FILE=examples/16-plugins/rules.csv \
  "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce --explain -b 1K -e 1M -f 32); echo "$out"
expect '^# tuner plugin: rules \(v5\) \(NCCL_TUNER_PLUGIN\)' "$out"
expect '^ +1024( +[0-9.]+){6} +(Ring|Tree)/(LL|LL128|Simple) +Tree/LL128$' "$out"
expect '^ +32768( +[0-9.]+){6} +(Ring|Tree)/(LL|LL128|Simple) +Tree/LL128$' "$out"
expect '^ +1048576( +[0-9.]+){6} +(Ring|Tree)/(LL|LL128|Simple) +(Ring/(LL|Simple)|Tree/[A-Za-z0-9]+)$' "$out"
out=$(NCCL_TUNER_PLUGIN=$BUILD/tests/plugins/libnccl-tuner-rules.so NCCL_TUNER_CONFIG_FILE=examples/16-plugins/rules.csv \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,COLL "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce \
  -b 1K -e 1M -f 32 -n 1 -w 0 2>&1); echo "$out" | grep -E "TUNER|rules tuner|count 8192 datatype float"
expect 'NCCL INFO TUNER/Plugin: Using rules \(v5\)$' "$out"
expect 'NCCL INFO rules tuner: init nRanks 2 nNodes 1, 2 rules$' "$out"
expect 'AllReduce: opCount .* count 8192 datatype float .* algorithm Tree protocol LL128 channels [0-9]+ tuner plugin$' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# ... and the env plugin's NCCL_PROTO=LL beats the process's Simple.
printf 'NCCL_PROTO=LL\n' >"$tmp/env.txt"
out=$(BATON_TEST_ENV_FILE=$tmp/env.txt NCCL_ENV_PLUGIN=$BUILD/tests/plugins/libnccl-env-file.so NCCL_PROTO=Simple \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$BIN/baton-perf" allreduce -t 2 -b 1M -e 1M 2>&1); echo "$out" | grep "count 262144" | head -2
expect 'AllReduce: opCount .* count 262144 datatype float .* protocol LL channels' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# ... and a network plugin (baton's socket back-end built as one) carries every NET connection.
out=$(LD_LIBRARY_PATH=$BUILD/lib NCCL_NET_PLUGIN=baton NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO \
  NCCL_DEBUG_SUBSYS=NET "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" allreduce -b 8 -e 1M -f 32 -c 1 2>&1)
echo "$out" | grep -E "NET/Plugin|using network|Out of bounds"
expect 'NCCL INFO NET/Plugin: Initialized baton-socket \(.*libnccl-net-baton.so, ncclNetPlugin_v11\) with 1 device$' "$out"
expect 'NCCL INFO NET: using network plugin baton-socket$' "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
# Lesson 13: baton's profiler plugin on 4 processes over NET, its summaries merged by baton-prof.
mkdir -p "$tmp/prof"
out=$(LD_LIBRARY_PATH=$BUILD/lib NCCL_PROFILER_PLUGIN=baton BATON_PROFILE_DIR=$tmp/prof NCCL_SHM_DISABLE=1 \
  NCCL_P2P_DISABLE=1 "$BIN/baton-run" -n 4 --no-prefix "$BIN/baton-perf" allreduce -b 16K -e 8M -f 512 \
  -d float,bfloat16 -n 5 -w 1 2>&1 | tail -3); echo "$out"
expect '^# Out of bounds values : 0 OK$' "$out"
out=$("$BIN/baton-prof" "$tmp/prof"); echo "$out"
expect '^# comm [0-9a-f]+: 4 ranks, summaries from 4$' "$out"
expect '^ +AllReduce +ncclBfloat16 +16384 +Ring/Simple +1 +14( +[0-9.]+){2}\.\.[0-9.]+ +[0-3]( +[0-9.]+){3}$' "$out"
expect '^ +AllReduce +ncclFloat32 +8388608 +Ring/Simple +[12] +14( +[0-9.]+){2}\.\.[0-9.]+ +[0-3]( +[0-9.]+){3}$' "$out"
exit $fail
