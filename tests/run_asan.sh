#!/usr/bin/env bash
# make test-asan: the library, unit and collective tests and the workers built with AddressSanitizer
# and UndefinedBehaviorSanitizer (-fno-sanitize-recover: the first finding stops the program), run
# over threads, processes, NET and fault injection. Ends with "N passed, N failed".
#   tests/run_asan.sh BUILD ASAN_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ASAN_DIR=${2:-$BUILD/tests-address-undefined}
BIN=$BUILD/bin
export BATON_BUILD=$BUILD
LOGDIR=$BUILD/test-logs-asan
source tests/suite_lib.sh
# The CPU backend on host buffers, as in run_all.sh (a GPU would take device memory).
export BATON_CUDA=${BATON_CUDA:-0}
# Leaks are findings too; every report prints its stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

suite asan-unit-tests 900 "$ASAN_DIR/unit_tests"
for proto in LL LL128 Simple; do
  suite "asan-collectives-quick-$proto" 900 env NCCL_PROTO=$proto "$ASAN_DIR/collective_tests" \
    --gtest_filter='ThreadsQuick*:Protocol*:TreeQuick*:Stage*:Group.*'
done
suite asan-collectives-window 900 env BATON_TEST_MEMORY=window "$ASAN_DIR/collective_tests" --gtest_filter='ThreadsQuick*'
# The wire formats' codecs, in their buffers (naive, pipelined) and inside the copy loop (fused).
suite asan-wire-formats 900 "$ASAN_DIR/collective_tests" --gtest_filter='WireFormat.*'
for n in 2 3 4; do
  suite "asan-processes-$n" 900 "$BIN/baton-run" -n $n "$ASAN_DIR/rank_worker"
done
suite asan-processes-window-3 900 env BATON_TEST_MEMORY=window "$BIN/baton-run" -n 3 "$ASAN_DIR/rank_worker"
# The NET transport between thread ranks: every byte through the proxy and the socket back-end.
suite asan-net 900 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$ASAN_DIR/collective_tests" \
  --gtest_filter='ThreadsQuick*:Group.*:SendRecvPatterns.*:ProtocolLine*'
suite asan-net-processes-3 900 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$BIN/baton-run" -n 3 "$ASAN_DIR/rank_worker"
# Killed, stopped and leaving ranks: the survivors' error paths, agreement and shrink.
suite asan-fault-injection 900 env BATON_TIMEOUT=4 tests/fault/fault_injection.sh --trials 12 "$ASAN_DIR"
suite asan-shrink-local 300 tests/tools/shrink_local_test.sh "$ASAN_DIR"
suite_summary
