#!/usr/bin/env bash
# The CUDA backend on a GPU, in one command: builds it, runs the collective check on device
# buffers (1, 2 and 4 thread ranks and 2 processes, every protocol; with NCCL_ALGO=Tree; with
# FIFOs in host memory, NCCL_P2P_DISABLE=1; over the NET transport, NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1, as between hosts), the send/recv check (ncclSend,
# ncclRecv, AlltoAll, Gather, Scatter on 1, 2 and 4 thread ranks and 2 processes; AlltoAll
# pairwise and Bruck too) and its sweep,
# the CUDA graph check (collectives, send/recv and AlltoAll captured, launched 20 times between eager calls),
# the window check (ncclMemAlloc's cuMem memory in symmetric windows, threads and processes) and
# its sweep (the symmetric kernels beside the ring, per size), sweeps per protocol and per
# collective against the device's copy bandwidth, and the AllReduce sweep with NVIDIA's
# libnccl.so.2 in the same run (one rank each: NVIDIA's library refuses two ranks on one GPU),
# printed as one table; last, the tuner's 'gpu' table measured here and what it then chooses.
#
#   tools/scripts/gpu-check.sh                  build with make, then check
#   BATON_GPU_CHECK_NO_BUILD=1 ...      use what $BUILD already holds (a build carried to the GPU)
#   NCCL_TESTS_DIR=~/nccl-tests ...     also build NVIDIA's nccl-tests against baton and run its sweeps
#   NVIDIA_NCCL_LIB=/path/to/lib ...    the folder with NVIDIA's libnccl.so.2 (default: the CUDA
#                                       toolkit's, then the one PyTorch's nvidia-nccl wheel installs)
#   GPU_CHECK_ONLY='tree|window' ...    only the steps whose names match this regex (a rerun of
#                                       what failed, on a GPU lent for minutes)
#   GPU_CHECK_STEP_TIMEOUT=60 ...       no step runs longer than this many seconds
# Without a GPU it exits 77 and says why.
set -uo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
OUT=${GPU_CHECK_OUT:-$BUILD/gpu-check}
MAXB=${GPU_CHECK_MAX_BYTES:-268435456}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists no device' || echo 'not found')); skipped"
  exit 77
fi
mkdir -p "$OUT"
echo "== machine"
nvidia-smi -L
nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
if [ -z "${BATON_GPU_CHECK_NO_BUILD:-}" ]; then
  echo "== build"
  make -j"$(nproc)" BUILD="$BUILD" lib device "$BUILD/tests/gpu_collectives" "$BUILD/tests/gpu_sendrecv" \
    "$BUILD/tests/gpu_graph" "$BUILD/tests/gpu_window" "$BUILD/tests/gpu_window_sweep" "$BUILD/bin/baton-run" >"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; echo "gpu-check: build failed ($OUT/build.log)"; exit 1; }
fi
LIB=$BUILD/lib
T=$BUILD/tests/gpu_collectives
P2P=$BUILD/tests/gpu_sendrecv
GRAPH=$BUILD/tests/gpu_graph
WIN=$BUILD/tests/gpu_window
for f in "$LIB/libnccl.so.2" "$LIB/libbaton-cuda.so" "$T" "$P2P" "$GRAPH" "$WIN" "$WIN"_sweep "$BUILD/bin/baton-run"; do
  [ -e "$f" ] || { echo "gpu-check: $f is missing"; exit 1; }
done
export BATON_WAIT_TIMEOUT=${BATON_WAIT_TIMEOUT:-30}  # a hung kernel gives up instead of holding the GPU
status=0
ran=0
want() {  # name: whether GPU_CHECK_ONLY selects this step (counted: none selected is a failure)
  [[ -z "${GPU_CHECK_ONLY:-}" || "$1" =~ ${GPU_CHECK_ONLY} ]] || return 1
  ran=$((ran + 1))
}
run() {  # name, timeout, command...: prints the command's output, records a failure
  local name=$1 secs=$2
  shift 2
  want "$name" || return 0
  [ -n "${GPU_CHECK_STEP_TIMEOUT:-}" ] && [ "$secs" -gt "$GPU_CHECK_STEP_TIMEOUT" ] && secs=$GPU_CHECK_STEP_TIMEOUT
  local t0=$SECONDS
  echo "== $name"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout "$secs" "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "gpu-check: $name failed (exit $rc)"; status=1; failed+=" $name"; }
  echo "-- $name: exit $rc, $((SECONDS - t0)) s"
}
failed=

echo "== which backend"
LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$LIB/libnccl.so.2" | grep "not found"
if want info-backend; then
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 \
    "$T" sweep -n 2 -e 64 2>&1 | grep -E "GPU communicator|not a GPU|Error|error" | head -3
fi
run check-threads-1 150 "$T" check -n 1
run check-threads-2 150 "$T" check -n 2
run check-procs-2 150 "$BUILD/bin/baton-run" -n 2 "$T" check --procs
# Tree AllReduce (NCCL_ALGO leaves AllReduce to it); one channel too, so a channel's share spans
# several chunks and the reduce runs ahead of the broadcast.
if want info-tree; then
  echo "== trees with NCCL_ALGO=allreduce:Tree (expect 'trees on' and 'Tree')"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_ALGO=allreduce:Tree NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=INIT,COLL timeout 60 "$T" sweep -n 2 -e 1048576 2>&1 | grep -E "trees on|algorithm Tree" | head -3
fi
run check-threads-2-tree 150 env NCCL_ALGO=allreduce:Tree "$T" check -n 2
run check-threads-4-tree 200 env NCCL_ALGO=allreduce:Tree "$T" check -n 4
run check-threads-2-tree-1ch 150 env NCCL_ALGO=allreduce:Tree BATON_GPU_CHANNELS=1 "$T" check -n 2
run check-procs-2-tree 150 env NCCL_ALGO=allreduce:Tree "$BUILD/bin/baton-run" -n 2 "$T" check --procs
# FIFOs in host memory (what devices without peer access get), on one GPU: NCCL_P2P_DISABLE=1.
if want info-hostfifo; then
  echo "== where the FIFOs lie with NCCL_P2P_DISABLE=1 (expect host memory)"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT \
    timeout 60 "$T" sweep -n 2 -e 64 2>&1 | grep -E "GPU communicator" | head -4
fi
run check-threads-2-hostfifo 150 env NCCL_P2P_DISABLE=1 "$T" check -n 2
run check-procs-2-hostfifo 150 env NCCL_P2P_DISABLE=1 "$BUILD/bin/baton-run" -n 2 "$T" check --procs
run sendrecv-threads-2-hostfifo 120 env NCCL_P2P_DISABLE=1 "$P2P" check -n 2
run sendrecv-procs-2-hostfifo 120 env NCCL_P2P_DISABLE=1 "$BUILD/bin/baton-run" -n 2 "$P2P" check --procs
# The NET path (as between hosts: staging FIFOs in pinned host memory, the proxies moving steps
# over TCP on loopback), on one GPU: NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1, every protocol.
NET=(env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
if want info-net; then
  echo "== where the FIFOs lie with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (expect NET connections)"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "${NET[@]}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT \
    timeout 60 "$T" sweep -n 2 -e 64 2>&1 | grep -E "GPU communicator" | head -4
fi
run check-threads-2-net 200 "${NET[@]}" "$T" check -n 2
run check-procs-2-net 200 "${NET[@]}" "$BUILD/bin/baton-run" -n 2 "$T" check --procs
run check-procs-2-net-tree 200 "${NET[@]}" NCCL_ALGO=allreduce:Tree "$BUILD/bin/baton-run" -n 2 "$T" check --procs
run sendrecv-procs-2-net 150 "${NET[@]}" "$BUILD/bin/baton-run" -n 2 "$P2P" check --procs
run sweep-threads-2-net 150 "${NET[@]}" "$T" sweep -n 2 -e 16777216
# Between processes the FIFOs go through CUDA IPC; a FIFO inside a larger allocation travels as the
# allocation's handle and an offset (INFO says how many).
if want info-ipc; then
  echo "== CUDA IPC between 2 processes (FIFOs inside a larger allocation, if any)"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 \
    "$BUILD/bin/baton-run" -n 2 "$P2P" check --procs 2>&1 | grep -E "through CUDA IPC|larger allocation|check" | head -6
fi
for n in 1 2 4; do run "sendrecv-threads-$n" 120 "$P2P" check -n $n; done
run sendrecv-procs-2 120 "$BUILD/bin/baton-run" -n 2 "$P2P" check --procs
# AlltoAll as copies and send/recv kernels (src/alltoall/alltoall_steps.h): pairwise rounds and Bruck (on 4
# ranks slot 3 passes through scratch); the in-place pattern takes steps whatever the algorithm.
for a in pairwise bruck; do run "sendrecv-threads-4-$a" 120 env BATON_ALLTOALL_ALGO=$a "$P2P" check -n 4; done
run sendrecv-threads-8-bruck 180 env BATON_ALLTOALL_ALGO=bruck "$P2P" check -n 8  # slot 7 uses both scratch homes
if want alltoall-steps-info; then
  echo "== AlltoAll steps on 4 thread ranks, Bruck forced (expect bruck, bruck in place, and pairwise for AlltoAllv)"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL \
    BATON_ALLTOALL_ALGO=bruck timeout 60 "$P2P" check -n 4 2>&1 | grep -oE "algorithm [a-z]+( in place)? \(device buffers: [^;]*" |
    sort | uniq -c
fi
for n in 1 2 4; do run "graph-threads-$n" 120 "$GRAPH" check -n $n; done
# AlltoAll inside the graph, each way it can run: one send/recv kernel; copies and kernels; and
# Bruck's scratch allocations (stream-ordered pool, captured as graph memory nodes).
for a in direct pairwise bruck; do run "graph-threads-4-alltoall-$a" 120 env BATON_ALLTOALL_ALGO=$a "$GRAPH" check -n 4 --alltoall; done
# ncclMemAlloc's cuMem memory in windows: threads share pointers; processes import each other's
# exported descriptors (expect "cuMem" and "mapped into this rank's CUDA device").
# The INFO lines show the imports worked (a failed import only makes a window unusable for the
# symmetric kernel, and the ring would still pass the check), so they are counted (2 processes x 2
# windows: each imports the other's 2).
if want window-info; then
  echo "== ncclMemAlloc and windows on device memory (expect cuMem allocations and imported windows)"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC timeout 60 \
    "$BUILD/bin/baton-run" -n 2 "$WIN" check --procs >"$OUT/window-info.log" 2>&1
  grep -E "cuMem|imported|CUDA device|cannot map|check" "$OUT/window-info.log" | head -12
  imported=$(grep -c "imported process" "$OUT/window-info.log")
  mapped=$(grep -c "mapped into this rank's CUDA device" "$OUT/window-info.log")
  if [ "$imported" -lt 4 ] || [ "$mapped" -lt 4 ] || grep -q "cannot map" "$OUT/window-info.log"; then
    echo "gpu-check: windows on device memory: $imported imports and $mapped mapped windows (expected 4 each)"
    status=1
    failed+=" window-info"
  fi
fi
# Every collective between windows must take its symmetric kernel (a ring would pass the check
# too). Per rank the check runs 2 AllGathers (SymStore), 3 ReduceScatters (SymLoad), 1 AlltoAll
# (SymAlltoAll), 57 small AllReduces (SymOneShot) and 3 larger ones (SymTwoShot); one of each kind
# of AllReduce is captured into a CUDA graph, which says so once, at capture.
if want window-coll; then
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout 60 \
    "$WIN" check -n 2 >"$OUT/window-coll.log" 2>&1
  missed=""
  for kernel_count in SymStore:4 SymLoad:6 SymAlltoAll:2 SymOneShot:114 SymTwoShot:6; do
    kernel=${kernel_count%:*} expected=${kernel_count#*:}
    got=$(grep -c "algorithm $kernel " "$OUT/window-coll.log")
    echo "$kernel launches in the 2-thread window check: $got (expected $expected)"
    [ "$got" -ge "$expected" ] || { echo "gpu-check: collectives between windows did not take $kernel"; missed=1; }
  done
  [ -z "$missed" ] || { status=1; failed+=" window-coll"; }
fi
for n in 1 2 4; do run "window-threads-$n" 120 "$WIN" check -n $n; done
run window-procs-2 120 "$BUILD/bin/baton-run" -n 2 "$WIN" check --procs
# What windows buy: the symmetric kernels beside the ring on cudaMalloc buffers, per size.
for c in allreduce allgather; do run "window-sweep-$c" 90 "$WIN"_sweep -n 2 -e "$MAXB" -c $c; done
run graph-threads-2-global 120 "$GRAPH" check -n 2 --global
run sendrecv-sweep-2ranks 90 "$P2P" sweep -n 2 -e "$MAXB"
for p in Simple LL128 LL; do
  run "sweep-2ranks-$p" 90 "$T" sweep -n 2 -e "$MAXB" -p "$p"
done
run sweep-2ranks-auto 90 "$T" sweep -n 2 -e "$MAXB"
for c in allgather reducescatter broadcast reduce; do
  run "sweep-2ranks-$c" 90 "$T" sweep -n 2 -e "$MAXB" -c $c
done
run sweep-1rank-baton 90 "$T" sweep -n 1 -e "$MAXB"
# The GPU tuning model: the 'gpu' table measured here (into $OUT, not the user's tuning file), then
# what it makes the tuner choose per size (each AllReduce launch's INFO line).
run calibrate-2ranks 300 "$T" calibrate -n 2 -e "$MAXB" -o "$OUT/tuning-gpu.txt"
if want tuned-choice && [ -s "$OUT/tuning-gpu.txt" ]; then
  echo "== AllReduce on 2 ranks with the measured 'gpu' table: algorithm and protocol from each size on"
  LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} BATON_TUNING_FILE=$OUT/tuning-gpu.txt NCCL_DEBUG=INFO \
    NCCL_DEBUG_SUBSYS=COLL timeout 90 "$T" sweep -n 2 -e "$MAXB" 2>&1 |
    awk '/AllReduce: opCount/ { for (i = 1; i < NF; i++) { if ($i == "count") c = $(i + 1); if ($i == "algorithm") a = $(i + 1); if ($i == "protocol") p = $(i + 1) }
         if (a " " p != last) { print "  from count " c ": " a " " p; last = a " " p } }'
fi

# NVIDIA's library, the same program and sweep, one rank (it refuses two on one GPU).
VLIB=${NVIDIA_NCCL_LIB:-}
if [ -z "$VLIB" ]; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib \
    "$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"; do
    [ -n "$d" ] && [ -e "$d/libnccl.so.2" ] && { VLIB=$d; break; }
  done
fi
if want nvidia && want sweep-1rank-baton; then  # the table joins that step's log
  if [ -n "$VLIB" ]; then
    echo "== NVIDIA's libnccl.so.2 from $VLIB"
    LD_LIBRARY_PATH=$VLIB timeout 90 "$T" sweep -n 1 -e "$MAXB" 2>&1 | tee "$OUT/sweep-1rank-nvidia.log"
    LD_LIBRARY_PATH=$VLIB timeout 60 "$T" sweep -n 2 -e 1024 2>&1 | tail -2 | sed 's/^/NVIDIA, 2 ranks on one GPU: /'
    echo "== one rank, AllReduce float sum: baton / NVIDIA busbw (same run)"
    printf "%12s %12s %12s %8s\n" size baton nvidia ratio
    join <(awk '$1 ~ /^[0-9]+$/ {print $1, $5}' "$OUT/sweep-1rank-baton.log" | sort -k1,1) \
      <(awk '$1 ~ /^[0-9]+$/ {print $1, $5}' "$OUT/sweep-1rank-nvidia.log" | sort -k1,1) |
      sort -n | awk '{printf "%12s %12s %12s %8.2f\n", $1, $2, $3, ($3 > 0 ? $2 / $3 : 0)}'
  else
    echo "== NVIDIA's libnccl.so.2 not found (set NVIDIA_NCCL_LIB): no same-run comparison"
  fi
fi

run check-threads-4 200 "$T" check -n 4

if [ -n "${NCCL_TESTS_DIR:-}" ] && want nccl-tests; then
  echo "== nccl-tests in $NCCL_TESTS_DIR against baton"
  NH=$OUT/nccl-home  # nccl-tests wants NCCL_HOME/include/nccl.h and NCCL_HOME/lib
  mkdir -p "$NH" && ln -sfn "$PWD/include" "$NH/include" && ln -sfn "$PWD/$LIB" "$NH/lib"
  make -C "$NCCL_TESTS_DIR" -j"$(nproc)" NCCL_HOME="$PWD/$NH" CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/nccl-tests-build.log" 2>&1 ||
    { tail -20 "$OUT/nccl-tests-build.log"; status=1; failed+=" nccl-tests-build"; }
  # One rank each (-g 1; its single-process mode needs one GPU per rank): the point-to-point ones
  # are then sends to itself.
  for t in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf \
    sendrecv_perf alltoall_perf gather_perf scatter_perf hypercube_perf; do
    [ -x "$NCCL_TESTS_DIR/build/$t" ] && LD_LIBRARY_PATH=$PWD/$LIB run "nccl-tests-$t" 300 "$NCCL_TESTS_DIR/build/$t" -b 8 -e "$MAXB" -f 4 -g 1 -c 1
  done
  # -G: each size's iterations captured into a CUDA graph and launched as one.
  for t in all_reduce_perf sendrecv_perf; do
    [ -x "$NCCL_TESTS_DIR/build/$t" ] && LD_LIBRARY_PATH=$PWD/$LIB run "nccl-tests-$t-graph" 300 "$NCCL_TESTS_DIR/build/$t" -b 8 -e "$MAXB" -f 4 -g 1 -c 1 -G 10
  done
fi
if [ "$ran" -eq 0 ]; then  # GPU_CHECK_ONLY matched no step (or is not a valid regex)
  echo "gpu-check: no step ran (GPU_CHECK_ONLY='${GPU_CHECK_ONLY:-}')"
  status=1
  failed+=" (no step selected)"
fi
echo "== gpu-check: $([ $status -eq 0 ] && echo passed || echo "FAILED:$failed"); logs in $OUT"
exit $status
