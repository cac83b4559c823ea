#!/usr/bin/env bash
# Runs every test suite of `make test` and ends with one "N passed, N failed, N skipped" line.
# Each suite is a command; a suite passes when it exits 0. Output of failing suites is shown.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BATON_BUILD:-build}
TESTDIR=${TESTDIR:-$BUILD/tests}
BIN=$BUILD/bin
export BATON_BUILD=$BUILD TESTDIR
LOGDIR=$BUILD/test-logs
source tests/suite_lib.sh
# The suites below test the CPU backend on host buffers; where a GPU is present its communicators
# (and ncclMemAlloc) would take device memory. The cuda-backend suite turns it back on.
export BATON_CUDA=${BATON_CUDA:-0}

# No test, tool, example or doc command dials outside this machine (docs/testing.md); the guard
# first proves it reports planted outside addresses.
suite network-destinations 60 sh -c 'python3 tests/lint/check_addresses.py --self-test && python3 tests/lint/check_addresses.py'
# Formatted as .clang-format says; nothing points at notes outside the repository.
suite source-hygiene 120 tests/lint/check_sources.sh
# Includes run down the house's layers (docs/architecture.md, "Layers"); the check first proves it
# reports a planted upward include.
suite layers 60 sh -c 'python3 tests/lint/check_layers.py --self-test && python3 tests/lint/check_layers.py'
# Every fuzz target's seed corpus and every input that once crashed one, replayed by plain g++
# builds of the targets (make fuzz runs them under libFuzzer; tests/fuzz/README.md).
suite fuzz-replay 300 tests/fuzz/replay_all.sh "$TESTDIR" ${FUZZ_NAMES:-}
suite unit-tests 300 "$TESTDIR/unit_tests"
# The CUDA backend: without a GPU, the library with its plugin present, absent and off, and the
# check program's link against NVIDIA's nccl.h; with one, tools/scripts/gpu-check.sh (docs/cuda-backend.md).
suite cuda-backend 600 tests/gpu/cuda_backend_test.sh
suite collective-tests-threads 900 "$TESTDIR/collective_tests"
# The 16- and 8-bit floats on the element loop too (BATON_CPU_SIMD=0): the stage before the
# vector loop (algorithms/reduce_x86.h), which the default runs exercise wherever AVX2 is present.
suite collective-tests-element-loop 300 env BATON_CPU_SIMD=0 "$TESTDIR/collective_tests" \
  --gtest_filter='*EveryType*:*half*:*bfloat16*:*f8*'
# Every protocol under the whole suite, on two channels (this machine's default is one per rank).
for proto in LL LL128 Simple; do
  suite "collective-tests-$proto-2ch" 900 env NCCL_PROTO=$proto NCCL_MIN_NCHANNELS=2 "$TESTDIR/collective_tests"
done
if [[ -n "${TSAN_TESTS:-}" && -x "${TSAN_TESTS}" ]]; then
  for proto in LL LL128 Simple; do
    suite "tsan-protocol-and-collectives-$proto" 600 env NCCL_PROTO=$proto TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
      "$TSAN_TESTS" --gtest_filter="${TSAN_FILTER:-Protocol*:Threads*Quick*}"
  done
  # The NET transport's proxy and sockets between thread ranks: every step crosses the proxy thread.
  suite tsan-net 600 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo \
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$TSAN_TESTS" --gtest_filter='ThreadsQuick*:ProtocolLine/*'
  # NET zero copy (lesson 09): registered send/recv buffers and the rings' Simple steps, sent from
  # and received into by the proxy.
  suite tsan-net-zero-copy 600 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo BATON_TEST_MEMORY=registered NCCL_PROTO=Simple \
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$TSAN_TESTS" --gtest_filter='ThreadsQuick*:SendRecvPatterns.*'

fi
for proto in LL LL128 Simple; do
  suite "jitter-quick-$proto" 300 env BATON_JITTER=1 NCCL_PROTO=$proto "$TESTDIR/collective_tests" --gtest_filter='Threads*Quick*:Stage*:Tree*'
done
# Eight processes on 2 cores, oversubscribed: the whole process suite (MoE's stages included) at
# the largest rank count the AlltoAll and MoE goals name.
suite processes-8 300 "$BIN/baton-run" -n 8 "$TESTDIR/rank_worker"
# Lesson 09: the suites on registered buffers (ncclMemAlloc + ncclCommRegister) and on symmetric
# windows (the symmetric kernels), threads and processes (processes map each other's buffers).
suite collective-tests-window 900 env BATON_TEST_MEMORY=window "$TESTDIR/collective_tests"
suite collective-tests-window-twoshot 300 env BATON_TEST_MEMORY=window BATON_SYM_TWOSHOT=1 BATON_SYM_ONESHOT_BYTES=0 \
  "$TESTDIR/collective_tests" --gtest_filter='ThreadsQuick*:AllReduce.*:Group.*'
suite collective-tests-registered 300 env BATON_TEST_MEMORY=registered "$TESTDIR/collective_tests" \
  --gtest_filter='ThreadsQuick*:AllReduce.*:Group.*:Stage*'
for mem in registered window; do
  for n in 2 3 4; do
    suite "processes-$mem-$n" 300 env BATON_TEST_MEMORY=$mem "$BIN/baton-run" -n $n "$TESTDIR/rank_worker"
  done
  suite "processes-$mem-4-Simple" 300 env BATON_TEST_MEMORY=$mem NCCL_PROTO=Simple "$BIN/baton-run" -n 4 "$TESTDIR/rank_worker"
done
if [[ -x "${TSAN_TESTS:-}" ]]; then
  suite tsan-window 600 env BATON_TEST_MEMORY=window TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    "$TSAN_TESTS" --gtest_filter='ThreadsQuick*:AlltoAllAlgo.*/window:AlltoAllWindow.*'
fi
# NET between threads of one process (NCCL_P2P_DISABLE + NCCL_SHM_DISABLE leave only NET, on loopback,
# as in NCCL); a subset: the whole suite over TCP takes 18 minutes on 2 cores.
suite collective-tests-net 600 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$TESTDIR/collective_tests" \
  --gtest_filter='ThreadsQuick*:Group.*:SendRecvPatterns.*:ProtocolLine*:AllReduce.*:TreeQuick*:TreeShape*'
# Two namespaced hosts x 2 ranks: the process suite, every protocol, IPv6, a killed rank, a cut link.
suite net-multihost 600 tests/net/multihost_test.sh "$BIN" "$TESTDIR"
# The same 2-host correctness checks with every rank's NET traffic through an NCCL network plugin
# (baton's socket back-end built as one, lesson 16); the fault checks stay in the pass above.
suite net-multihost-plugin 600 tests/net/multihost_test.sh "$BIN" "$TESTDIR" --net-plugin "$(cd "$BUILD/lib" && pwd)/libnccl-net-baton.so"
suite shrink-local 120 tests/tools/shrink_local_test.sh "$TESTDIR"
# SIGKILL, SIGSTOP and a rank leaving mid-shrink at random points of every collective (lesson 10);
# `make fault-long` runs 120 trials.
suite fault-injection 300 tests/fault/fault_injection.sh --trials 24 "$TESTDIR"
# A peer dies while its ncclMemAlloc buffers are mapped (registered and window): survivors fail cleanly.
suite fault-registered 300 tests/fault/registered_kill_test.sh "$BIN"
# Scripted hangs and mismatches on 4 processes (lesson 14): every rank ends within
# BATON_WAIT_TIMEOUT + 5 s, and baton-doctor names the rank, the operation and the cause; then the
# same on 2 namespaced hosts x 2, with a cut link between them (skipped where namespaces cannot be made).
suite hang-scenarios 180 tests/fault/hang_scenarios.sh "$TESTDIR" "$BIN"
suite hang-scenarios-2hosts 240 tests/fault/hang_scenarios.sh --hosts 2 "$TESTDIR" "$BIN"
# NCCL's RAS service on 8 processes: baton-ras and a client written against NCCL's protocol alone
# ask it, a killed rank is named dead (status and monitor), another process takes the address over
# when the listening one dies, and a rank that stops calling collectives is named.
suite ras 120 tests/fault/ras_check.sh "$TESTDIR" "$BIN"
# The same job on 2 namespaced hosts x 4: each host's service reports both hosts' ranks, and names a
# rank killed on the other host (skipped where namespaces cannot be made).
suite ras-2hosts 120 tests/fault/ras_check.sh --hosts 2 "$TESTDIR" "$BIN"
# BATON_CHECK_MODE=debug on correct programs: every collective's arguments exchanged first, no false alarm.
suite collective-tests-check-debug 300 env BATON_CHECK_MODE=debug "$TESTDIR/collective_tests" \
  --gtest_filter='ThreadsQuick*:Group.*:Broadcast*:Reduce.*'
# make install into a temporary prefix and DESTDIR; programs built against it with flags,
# pkg-config, the static archive and CMake; make uninstall.
suite install 180 tests/tools/install_test.sh "$BUILD"
# make deb, then dpkg -i, a program built with -lnccl alone, pkg-config, CMake, dpkg -r (where it can).
suite deb 180 tests/tools/deb_test.sh "$BUILD"
suite baton-run 120 tests/tools/baton_run_test.sh "$BIN/baton-run"
suite baton-topo 120 tests/tools/baton_topo_test.sh "$BIN/baton-topo"
# NCCL_TUNER_PLUGIN: plugins in C of every interface version, and failing ones (lesson 16).
suite tuner-plugin 180 tests/tools/tuner_plugin_test.sh "$BUILD"
# NCCL_ENV_PLUGIN: every variable the library reads answered by a plugin in C (lesson 16).
suite env-plugin 120 tests/tools/env_plugin_test.sh "$BUILD"
# NCCL_PROFILER_PLUGIN: NCCL's event tree checked on 4 processes over NET and 4 threads (lesson 13).
suite profiler-plugin 180 tests/tools/profiler_plugin_test.sh "$BUILD"
# NCCL_NET_PLUGIN: baton's socket plugin (v11, and a v6-only build), NCCL_NET's choice, and failing
# plugins, 2 ranks with every connection on NET (lesson 16).
suite net-plugin 120 tests/tools/net_plugin_test.sh "$BUILD"
suite mpirun-launch 180 tests/tools/mpirun_launch_test.sh "$BIN"
if [[ -n "${NVIDIA_HEADER_TEST:-}" ]]; then
  suite nvidia-header-threads 120 env LD_LIBRARY_PATH="$BUILD/lib" "$NVIDIA_HEADER_TEST"
  suite nvidia-header-processes 120 env LD_LIBRARY_PATH="$BUILD/lib" "$BIN/baton-run" -n 3 "$NVIDIA_HEADER_TEST"
else
  suite nvidia-header 10 sh -c 'echo "SKIP: no nccl.h from a CUDA toolkit on this machine"; exit 77'
fi
suite lessons 300 tests/lessons/run_lessons.sh "$BUILD"
suite perf-2proc-check 300 "$BIN/baton-run" -n 2 "$BIN/baton-perf" allreduce -b 8 -e 32M -f 4 -n 2 -w 1 -c 1
suite perf-8threads-16M 120 "$BIN/baton-perf" allreduce -t 8 -b 8 -e 16M -f 2 -n 2 -w 1 -c 1
suite perf-all-collectives 300 tests/tools/perf_all_collectives.sh "$BIN"
# nccl-tests' names: typical command lines, their text and -J JSON parsed, every flag honoured or refused.
suite nccl-tests-names 300 tests/tools/nccl_tests_compat_test.sh "$BIN"

suite_summary
