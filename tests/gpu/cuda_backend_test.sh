#!/usr/bin/env bash
# The CUDA backend where this machine allows: without a GPU, that libnccl.so.2 has no link-time
# CUDA dependency, runs collectives on host buffers whether the plugin is present, absent or
# turned off, and says why it made no GPU communicator; that the check program (device pointers
# and streams, compiled against NVIDIA's nccl.h) links and skips cleanly; and that
# tools/scripts/gpu-check.sh skips with its reason. With a GPU, tools/scripts/gpu-check.sh runs in full.
set -uo pipefail
unset BATON_CUDA  # run_all.sh turns the backend off for the CPU suites
cd "$(dirname "$0")/../.."
BUILD=${BATON_BUILD:-build}
LIB=$BUILD/lib
PERF=$BUILD/bin/baton-perf
fail=0
has() {  # text, then extended regular expressions it must all match
  local text=$1
  shift
  for re in "$@"; do grep -Eq "$re" <<<"$text" || return 1; done
}
check() {  # description, then a command that must succeed
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}
allreduce() {  # env assignments..., then runs one small AllReduce with INIT logging; prints its output
  env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_SOCKET_IFNAME=lo BATON_TUNING_FILE=none \
    "$PERF" all_reduce -b 1K -e 1K -n 2 -w 1 -t 2 -c 1 2>&1
}

if nvidia-smi -L >/dev/null 2>&1; then
  tools/scripts/gpu-check.sh
  exit $?
fi

check "libnccl.so.2 needs no CUDA library at link time" \
  sh -c "! readelf -d '$LIB/libnccl.so.2' | grep -E 'NEEDED.*(cuda|cudart|nvidia)'"
if [ -e "$LIB/libbaton-cuda.so" ]; then
  check "libbaton-cuda.so exports batonCudaBackend" sh -c "nm -D '$LIB/libbaton-cuda.so' | grep -q ' T batonCudaBackend'"
  check "libbaton-cuda.so links the CUDA runtime statically (needs only the driver)" \
    sh -c "! readelf -d '$LIB/libbaton-cuda.so' | grep -q 'NEEDED.*cudart'"
  out=$(allreduce)
  check "plugin present, no device: host-buffer AllReduce runs and INFO says why there is no GPU communicator" \
    has "$out" "not a GPU communicator.*no CUDA device" "Out of bounds values : 0 OK"
else
  echo "SKIP: libbaton-cuda.so not built (no nvcc): the plugin checks"
fi
out=$(allreduce BATON_CUDA_PLUGIN=/nonexistent/libbaton-cuda.so)
check "plugin absent (a machine without CUDA): host-buffer AllReduce runs, INFO names the missing plugin" \
  has "$out" "not a GPU communicator.*CUDA backend not loaded" "Out of bounds values : 0 OK"
out=$(allreduce BATON_CUDA=0)
check "BATON_CUDA=0: the CPU backend only" has "$out" "not a GPU communicator.*BATON_CUDA=0" "Out of bounds values : 0 OK"
if [ -x "$BUILD/tests/gpu_collectives" ]; then
  LD_LIBRARY_PATH=$LIB "$BUILD/tests/gpu_collectives" check -n 2 >/dev/null 2>&1
  rc=$?
  check "gpu_collectives (NVIDIA's nccl.h, device pointers, streams) links and exits 77 without a GPU (got $rc)" test "$rc" -eq 77
fi
if [ -x "$BUILD/tests/gpu_sendrecv" ]; then
  LD_LIBRARY_PATH=$LIB "$BUILD/tests/gpu_sendrecv" check -n 2 >/dev/null 2>&1
  rc=$?
  check "gpu_sendrecv (ncclSend/ncclRecv, AlltoAll, Gather, Scatter on device pointers) links and exits 77 without a GPU (got $rc)" test "$rc" -eq 77
fi
if [ -x "$BUILD/tests/gpu_graph" ]; then
  LD_LIBRARY_PATH=$LIB "$BUILD/tests/gpu_graph" check -n 2 >/dev/null 2>&1
  rc=$?
  check "gpu_graph (collectives and send/recv captured into CUDA graphs) links and exits 77 without a GPU (got $rc)" test "$rc" -eq 77
fi
if [ -x "$BUILD/tests/gpu_window" ]; then
  LD_LIBRARY_PATH=$LIB "$BUILD/tests/gpu_window" check -n 2 >/dev/null 2>&1
  rc=$?
  check "gpu_window (ncclMemAlloc's cuMem memory in windows, the symmetric kernels) links and exits 77 without a GPU (got $rc)" test "$rc" -eq 77
fi
if [ -x "$BUILD/tests/gpu_window_sweep" ]; then
  LD_LIBRARY_PATH=$LIB "$BUILD/tests/gpu_window_sweep" -n 2 >/dev/null 2>&1
  rc=$?
  check "gpu_window_sweep (windows beside cudaMalloc buffers, per size) links and exits 77 without a GPU (got $rc)" test "$rc" -eq 77
fi
tools/scripts/gpu-check.sh >/tmp/gpu-check-skip.$$ 2>&1
rc=$?
check "tools/scripts/gpu-check.sh exits 77 without a GPU (got $rc): $(head -1 /tmp/gpu-check-skip.$$)" test "$rc" -eq 77
rm -f /tmp/gpu-check-skip.$$
echo "SKIP: no GPU here: the CUDA backend's kernels are compiled, not run (tools/scripts/gpu-check.sh runs them on a GPU)"
exit $fail
