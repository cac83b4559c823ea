# baton: the one entry point.
#
#   make sweep      README's first command: installs missing packages, builds, runs an allreduce
#                   sweep over 4 local processes
#   make test       README's second command: installs missing packages, builds (the CUDA plugin
#                   too where nvcc exists), then unit + multi-rank tests, tool tests, lesson tests
#   make            library (build/lib), tools and examples (build/bin); the CUDA plugin only where
#                   an NVIDIA driver is loaded (else `make cuda`); says which packages are missing
#   make cuda       the nvcc build: the CUDA plugin libbaton-cuda.so and the device compile check
#   make test-tsan  the protocol and collective tests under ThreadSanitizer
#   make test-asan  threads, processes, NET and fault suites under AddressSanitizer + UBSan (~25 min)
#   make soak       random collectives for SOAK_SECONDS on 4 processes and on two namespaced hosts
#   make fuzz       every fuzz target under libFuzzer for FUZZ_SECONDS each (make test replays their corpora)
#   make bench      the allreduce sweep of docs/perf.md (2 processes, 8 B .. 256 MiB)
#   make stress     long runs: jitter mode, 8 ranks, repeated sweeps (not part of `make test`)
#   make lessons    run every lesson's example
#   make deps       install the Debian packages baton needs (tools/install-deps.sh)
#   make format     format every C/C++ source as .clang-format says (make test checks it)
#   make install    headers, libnccl.so.2, tools, pkg-config and CMake files under PREFIX (DESTDIR honoured)
#   make uninstall  removes what make install wrote under PREFIX
#   make deb        a Debian package of the install under /usr (DEBDIR=build: baton_<version>_<arch>.deb)
#
# Variables: BUILD=build, CXX=g++, NVCC=auto-detected, SANITIZE=thread|address,undefined, PREFIX=/usr/local,
# DESTDIR, CUDA=1 (build the CUDA plugin with `make` even without a driver).

BUILD    ?= build
CXX      ?= g++
comma    := ,
SANDIR   := $(subst $(comma),-,$(SANITIZE))
OBJ      := $(BUILD)/obj$(if $(SANITIZE),-$(SANDIR))
LIBDIR   := $(BUILD)/lib$(if $(SANITIZE),-$(SANDIR))
BINDIR   := $(BUILD)/bin
TESTDIR  := $(BUILD)/tests$(if $(SANITIZE),-$(SANDIR))

# ---- dependencies: say what is missing; `make sweep` and `make test` install it first -----------
# Installing runs as a step of those two targets (deps-if-missing), never while make reads this file:
# the flags below ask pkg-config, so those targets run the build in a second make that reads them
# after the packages are in.
DEPS_OK := $(shell tools/install-deps.sh --check >/dev/null 2>&1 && echo yes)
ifneq ($(DEPS_OK),yes)
  ifeq ($(MAKELEVEL),0)
    ifeq ($(filter sweep test deps deps-if-missing,$(MAKECMDGOALS)),)
      $(warning baton: some packages are missing; make sweep / make test install them (as root), or run: sudo tools/install-deps.sh)
    endif
  endif
endif

NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVIDIA_NCCL_H := $(wildcard $(CUDA_HOME)/include/nccl.h)
MPICXX ?= $(shell command -v mpicxx 2>/dev/null)
ifeq ($(MAKELEVEL),0)
  $(info baton: g++ $(shell $(CXX) -dumpfullversion); nvcc: $(if $(NVCC),$(NVCC),none); NVIDIA nccl.h: $(if $(NVIDIA_NCCL_H),$(NVIDIA_NCCL_H),none); mpicxx: $(if $(MPICXX),$(MPICXX),none); hwloc: $(or $(shell pkg-config --modversion hwloc 2>/dev/null),missing (tools/install-deps.sh)))
endif

# ---- flags -----------------------------------------------------------------------------------
# -Wno-restrict: g++ 12 reports false positives inside std::string at -O3 (GCC bug 105329).
# Under ASan, -Wno-maybe-uninitialized: g++ 12 reports false positives inside std::regex there.
WARN     := -Wall -Wextra -Werror -Wno-restrict $(if $(findstring address,$(SANITIZE)),-Wno-maybe-uninitialized)
OPT      ?= -O3
# A sanitizer finding stops the program (UBSan would otherwise print and go on).
SANFLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer \
              $(if $(findstring undefined,$(SANITIZE)),-fno-sanitize-recover=all),)
CPPFLAGS := -Iinclude -Isrc -Ialgorithms -Itransports
CXXFLAGS := -std=c++20 $(OPT) -g $(WARN) -fPIC -pthread -fvisibility=hidden $(SANFLAGS) $(HWLOC_CFLAGS)
LDFLAGS  := -pthread $(SANFLAGS)

LIB_SRCS := $(wildcard src/*.cc src/*/*.cc transports/*.cc transports/*/*.cc transports/net/*/*.cc)
# hwloc (topology discovery), libibverbs (RDMA devices), libdl (NVML, when a driver is installed).
HWLOC_CFLAGS := $(shell pkg-config --cflags hwloc 2>/dev/null)
SYS_LIBS := $(shell pkg-config --libs hwloc 2>/dev/null || echo -lhwloc) -libverbs -ldl -lrt
LIB_OBJS := $(LIB_SRCS:%.cc=$(OBJ)/%.o)
SO       := $(LIBDIR)/libnccl.so.2
ARCHIVE  := $(LIBDIR)/libnccl_static.a

.PHONY: all lib tools examples tests test test-now test-tsan tsan-build asan-build test-asan soak fuzz fuzz-build \
        fuzz-replay sweep sweep-now bench stress lessons deps deps-if-missing clean cuda device format install \
        uninstall deb
# The CUDA plugin is built by `make` where an NVIDIA driver is loaded (a GPU can run it), or with
# CUDA=1; elsewhere nvcc and ptxas would take most of the build for a library no one can load here.
# `make cuda` builds it on demand and `make test` always does where nvcc exists, so CI keeps the
# device code compiling.
NVIDIA_DRIVER := $(wildcard /proc/driver/nvidia/version)
all: lib tools examples $(if $(or $(NVIDIA_DRIVER),$(CUDA)),cuda)

lib: $(SO) $(LIBDIR)/libnccl.so $(ARCHIVE) $(LIBDIR)/libnccl-tuner-baton.so $(LIBDIR)/libnccl-profiler-baton.so \
     $(LIBDIR)/libnccl-net-baton.so

$(OBJ)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(SO): $(LIB_OBJS) src/api/libnccl.map
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script=src/api/libnccl.map -Wl,--no-undefined \
	  -o $@ $(LIB_OBJS) $(LDFLAGS) $(SYS_LIBS)
$(LIBDIR)/libnccl.so: $(SO)
	ln -sf libnccl.so.2 $@
$(ARCHIVE): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(LIB_OBJS)

# baton's calibrated tuner as an NCCL tuner plugin (lesson 16): the cost model's objects and the
# logger, nothing else of the library; it exports only ncclTunerPlugin_v5 and _v4.
TUNER_PLUGIN_OBJS := $(OBJ)/tools/tuner-plugin/baton_tuner.o $(OBJ)/src/tuner/tuner.o $(OBJ)/src/tuner/tuning_file.o \
                     $(OBJ)/src/tuner/tuner_env.o $(OBJ)/src/misc/debug.o $(OBJ)/src/misc/param.o \
                     $(OBJ)/tools/tuner-plugin/process_env.o
$(LIBDIR)/libnccl-tuner-baton.so: $(TUNER_PLUGIN_OBJS) tools/tuner-plugin/export.map
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,--no-undefined -Wl,--version-script=tools/tuner-plugin/export.map -o $@ $(TUNER_PLUGIN_OBJS) \
	  $(LDFLAGS)

# baton's profiler as an NCCL profiler plugin (lesson 13): the interface header and the timeline
# writer (BATON_TRACE's), nothing else of the library.
PROFILER_PLUGIN_OBJS := $(OBJ)/tools/profiler-plugin/baton_profiler.o $(OBJ)/src/misc/trace.o $(OBJ)/src/misc/debug.o \
                        $(OBJ)/src/misc/param.o $(OBJ)/tools/tuner-plugin/process_env.o
$(LIBDIR)/libnccl-profiler-baton.so: $(PROFILER_PLUGIN_OBJS) tools/profiler-plugin/export.map
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,--no-undefined -Wl,--version-script=tools/profiler-plugin/export.map -o $@ \
	  $(PROFILER_PLUGIN_OBJS) $(LDFLAGS)

# baton's socket back-end as an NCCL network plugin (lesson 16): the back-end's objects and the
# logger; it exports only ncclNetPlugin_v11 and _v6. The tests also build a v6-only copy.
NET_PLUGIN_OBJS := $(OBJ)/tools/net-plugin/baton_net_plugin.o $(OBJ)/transports/net/socket/socket_backend.o \
                   $(OBJ)/transports/net/socket/socket_data.o $(OBJ)/transports/net/socket/socket_helper.o \
                   $(OBJ)/src/misc/socket.o $(OBJ)/src/misc/debug.o $(OBJ)/src/misc/param.o \
                   $(OBJ)/tools/tuner-plugin/process_env.o
$(LIBDIR)/libnccl-net-baton.so: $(NET_PLUGIN_OBJS) tools/net-plugin/export.map
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,--no-undefined -Wl,--version-script=tools/net-plugin/export.map -o $@ $(NET_PLUGIN_OBJS) \
	  $(LDFLAGS) -lpthread
$(OBJ)/tools/net-plugin/baton_net_plugin_v6.o: tools/net-plugin/baton_net_plugin.cc
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(CPPFLAGS) -DBATON_NET_V6_ONLY -c $< -o $@

# ---- device code under nvcc ------------------------------------------------------------------
DEVICE_OBJ := $(BUILD)/obj/algorithms_device.o
# The CUDA backend's plugin (src/cuda/*.cu): every collective kernel the library can launch, and
# the runtime calls, in libbaton-cuda.so beside libnccl.so.2, which opens it at run time.
# CUDA_ARCH: the GPUs to build for (sm_90: H100/H200); PTX for the last one is kept for newer GPUs.
CUDA_ARCH ?= 90
NVCC_ARCH := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
             -gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))
CUDA_PLUGIN := $(LIBDIR)/libbaton-cuda.so
CUDA_SRCS := $(wildcard src/cuda/*.cu)
CUDA_OBJS := $(CUDA_SRCS:%.cu=$(OBJ)/%.o)
ifneq ($(NVCC),)
cuda device: $(DEVICE_OBJ) $(CUDA_PLUGIN)
$(DEVICE_OBJ): algorithms/device_check.cu $(wildcard algorithms/*.h) include/baton/device.h include/nccl.h
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++20 -arch=sm_90 -Ialgorithms -Iinclude -Werror all-warnings -c $< -o $@
$(OBJ)/src/cuda/%.o: src/cuda/%.cu $(wildcard src/cuda/*.h src/cuda/*.cuh algorithms/*.h) include/nccl.h
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++20 $(NVCC_ARCH) -Ialgorithms -Iinclude -Isrc/cuda -Xcompiler -fPIC,-fvisibility=hidden \
	  -Werror all-warnings -c $< -o $@
# The runtime is linked statically: the plugin needs only the driver (libcuda.so.1) where it runs.
$(CUDA_PLUGIN): $(CUDA_OBJS)
	@mkdir -p $(dir $@)
	$(NVCC) -shared $(NVCC_ARCH) -cudart static -o $@ $(CUDA_OBJS)
else
cuda device:
	@echo "baton: nvcc not found: device code not compiled (CPU backend only)"
endif

# ---- tools and examples ----------------------------------------------------------------------
PROGRAM_LIBS := -L$(LIBDIR) -Wl,-rpath,'$$ORIGIN/../lib' -lnccl
# nccl-tests' program names, each a link to baton-perf, which reads its own name (README's table).
NCCL_TESTS_NAMES := all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
                    sendrecv_perf gather_perf scatter_perf hypercube_perf
tools: $(BINDIR)/baton-run $(BINDIR)/baton-perf $(BINDIR)/baton-topo $(BINDIR)/bench-reduce $(BINDIR)/baton-doctor \
       $(BINDIR)/baton-ras $(BINDIR)/baton-prof $(BINDIR)/baton-latency $(BINDIR)/bench-socket \
       $(NCCL_TESTS_NAMES:%=$(BINDIR)/%)

# Reads the ranks' flight-recorder dumps (lesson 14): a Python 3 script, copied as it is.
$(BINDIR)/baton-doctor: tools/baton-doctor/baton-doctor
	@mkdir -p $(dir $@)
	cp $< $@
# Merges the ranks' summaries of baton's profiler plugin (lesson 13): Python 3, copied as it is.
$(BINDIR)/baton-prof: tools/baton-prof/baton-prof
	@mkdir -p $(dir $@)
	cp $< $@

$(NCCL_TESTS_NAMES:%=$(BINDIR)/%): $(BINDIR)/baton-perf
	ln -sfn baton-perf $@

# NCCL's RAS client protocol (lesson 14): no baton header, no library.
$(BINDIR)/baton-ras: tools/baton-ras/baton-ras.cc
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPT) $(WARN) $< -o $@

$(BINDIR)/baton-run: $(wildcard tools/baton-run/*.cc tools/baton-run/*.h)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPT) $(WARN) $(filter %.cc,$^) -o $@

# The reduce loop alone, per element type (docs/perf.md): header-only, no library.
$(BINDIR)/bench-reduce: tools/bench-reduce/bench_reduce.cc $(wildcard algorithms/*.h)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPT) $(WARN) -Ialgorithms $< -o $@

# baton's row of the peer latency table (tools/bench-peers/latency_table.h, bench-peers.sh --latency).
$(BINDIR)/baton-latency: tools/bench-peers/baton_latency.cc tools/bench-peers/latency_table.h tools/bench-peers/latency_breakdown.h $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 $(OPT) $(WARN) -Iinclude $< -o $@ $(PROGRAM_LIBS) $(LDFLAGS)

PERF_SRCS := $(wildcard tools/baton-perf/*.cc)
PERF_OBJS := $(PERF_SRCS:%.cc=$(OBJ)/%.o)
$(BINDIR)/baton-perf: $(PERF_OBJS) $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(PERF_OBJS) $(PROGRAM_LIBS) $(LDFLAGS)

# The socket back-end against a plain TCP ping-pong (docs/perf.md): it drives the back-end's
# internals, so it links the archive.
$(BINDIR)/bench-socket: $(OBJ)/tools/bench-socket/bench_socket.o $(ARCHIVE)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $< $(ARCHIVE) $(LDFLAGS) $(SYS_LIBS)

# baton-topo reads the library's internals (topology, search, simulator): it links the archive.
TOPO_SRCS := $(wildcard tools/baton-topo/*.cc)
TOPO_OBJS := $(TOPO_SRCS:%.cc=$(OBJ)/%.o)
$(OBJ)/tools/baton-topo/%.o: CPPFLAGS += -Itools/baton-topo
$(BINDIR)/baton-topo: $(TOPO_OBJS) $(ARCHIVE)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(TOPO_OBJS) $(ARCHIVE) $(LDFLAGS) $(SYS_LIBS)

EXAMPLE_SRCS := $(wildcard examples/*/*.c)
EXAMPLE_CXX_SRCS := $(wildcard examples/*/*.cc)  # the device-side API's examples are C++
EXAMPLES := $(patsubst examples/%.c,$(BINDIR)/examples/%,$(EXAMPLE_SRCS)) \
            $(patsubst examples/%.cc,$(BINDIR)/examples/%,$(EXAMPLE_CXX_SRCS))
examples: $(EXAMPLES)
$(BINDIR)/examples/%: examples/%.c include/nccl.h $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L -O2 $(WARN) -Iinclude $< -o $@ -L$(LIBDIR) -Wl,-rpath,'$$ORIGIN/../../../lib' -lnccl -pthread -lm
$(BINDIR)/examples/%: examples/%.cc include/nccl.h include/baton/device.h $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -std=c++20 -O2 $(WARN) -Iinclude $< -o $@ -L$(LIBDIR) -Wl,-rpath,'$$ORIGIN/../../../lib' -lnccl -pthread

# ---- tests -----------------------------------------------------------------------------------
GTEST_LIBS := -lgtest -lgtest_main -pthread
UNIT_SRCS  := $(wildcard tests/unit/*.cc)
COLL_SRCS  := $(wildcard tests/collectives/*.cc)
TEST_OBJS_U := $(UNIT_SRCS:%.cc=$(OBJ)/%.o)
TEST_OBJS_C := $(COLL_SRCS:%.cc=$(OBJ)/%.o)
# A program compiled against NVIDIA's own nccl.h (from the CUDA toolkit), run against baton.
ABI_TEST := $(if $(NVIDIA_NCCL_H),$(TESTDIR)/nvidia_header_test,)
TEST_BINS := $(TESTDIR)/unit_tests $(TESTDIR)/collective_tests $(TESTDIR)/rank_worker $(TESTDIR)/shrink_worker \
             $(TESTDIR)/fault_worker $(TESTDIR)/soak_worker $(TESTDIR)/fused_worker $(TESTDIR)/hang_worker \
             $(TESTDIR)/ras_worker
# The CUDA backend's check (tools/scripts/gpu-check.sh runs it on a GPU): device pointers and streams,
# compiled against NVIDIA's nccl.h when the toolkit has one, linked to baton's libnccl.so.2.
GPU_TEST := $(if $(NVCC),$(TESTDIR)/gpu_collectives $(TESTDIR)/gpu_sendrecv $(TESTDIR)/gpu_graph \
              $(TESTDIR)/gpu_window $(TESTDIR)/gpu_window_sweep,)
# Plugins a third party would write, for the plugin hosts' tests (tests/plugins/, lesson 16): C, the
# public interface headers only, one library per version and failure they exercise.
TEST_PLUGIN_DIR := $(TESTDIR)/plugins
TUNER_TEST_PLUGINS := rules rules4 rules3 rules2 failinit failcoll garbage v6only
PROFILER_TEST_PLUGINS := tree tree4 failinit failstart null slow
NET_TEST_PLUGINS := zerodev failinit failconn v5 v12
TEST_PLUGINS := $(TUNER_TEST_PLUGINS:%=$(TEST_PLUGIN_DIR)/libnccl-tuner-%.so) $(TEST_PLUGIN_DIR)/libnccl-tuner-none.so \
                $(TEST_PLUGIN_DIR)/libnccl-env-file.so $(TEST_PLUGIN_DIR)/libnccl-env-failinit.so \
                $(PROFILER_TEST_PLUGINS:%=$(TEST_PLUGIN_DIR)/libnccl-profiler-%.so) \
                $(TEST_PLUGIN_DIR)/libnccl-profiler-none.so $(NET_TEST_PLUGINS:%=$(TEST_PLUGIN_DIR)/libnccl-net-%.so) \
                $(TEST_PLUGIN_DIR)/libnccl-net-v6only.so $(TEST_PLUGIN_DIR)/libnccl-net-none.so \
                $(TEST_PLUGIN_DIR)/libnccl-net-withtuner.so
PROFILER_PLUGIN_FLAGS_tree :=
PROFILER_PLUGIN_FLAGS_tree4 := -DPROF_V4
PROFILER_PLUGIN_FLAGS_failinit := -DPROF_FAIL_INIT
PROFILER_PLUGIN_FLAGS_failstart := -DPROF_FAIL_START
PROFILER_PLUGIN_FLAGS_null := -DPROF_NULL
PROFILER_PLUGIN_FLAGS_slow := -DPROF_SLOW
$(TEST_PLUGIN_DIR)/libnccl-profiler-%.so: tests/plugins/profiler_tree.c include/baton/plugin_profiler.h \
                                          include/baton/plugin_common.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Iinclude $(PROFILER_PLUGIN_FLAGS_$*) $< -o $@
TUNER_PLUGIN_FLAGS_rules :=
TUNER_PLUGIN_FLAGS_rules4 := -DTUNER_V4
TUNER_PLUGIN_FLAGS_rules3 := -DTUNER_V3
TUNER_PLUGIN_FLAGS_rules2 := -DTUNER_V2
TUNER_PLUGIN_FLAGS_failinit := -DTUNER_FAIL_INIT
TUNER_PLUGIN_FLAGS_failcoll := -DTUNER_FAIL_COLLINFO
TUNER_PLUGIN_FLAGS_garbage := -DTUNER_GARBAGE
TUNER_PLUGIN_FLAGS_v6only := -DTUNER_V6_ONLY
$(TEST_PLUGIN_DIR)/libnccl-tuner-%.so: tests/plugins/tuner_rules.c include/baton/plugin_tuner.h include/baton/plugin_common.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Iinclude $(TUNER_PLUGIN_FLAGS_$*) $< -o $@
$(TEST_PLUGIN_DIR)/libnccl-env-file.so $(TEST_PLUGIN_DIR)/libnccl-env-failinit.so: tests/plugins/env_file.c \
                                                                             include/baton/plugin_env.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Iinclude \
	  $(if $(findstring failinit,$@),-DENV_FAIL_INIT) $< -o $@
NET_PLUGIN_FLAGS_zerodev := -DNET_ZERO_DEVICES
NET_PLUGIN_FLAGS_failinit := -DNET_FAIL_INIT
NET_PLUGIN_FLAGS_failconn := -DNET_FAIL_CONNECT
NET_PLUGIN_FLAGS_v5 := -DNET_SYMBOL=ncclNetPlugin_v5
NET_PLUGIN_FLAGS_v12 := -DNET_SYMBOL=ncclNetPlugin_v12
$(TEST_PLUGIN_DIR)/libnccl-net-%.so: tests/plugins/net_faulty.c include/baton/plugin_net.h include/baton/plugin_common.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Iinclude $(NET_PLUGIN_FLAGS_$*) $< -o $@
# A network plugin library that also carries a tuner (NCCL looks there when no tuner library is found).
$(TEST_PLUGIN_DIR)/libnccl-net-withtuner.so: tests/plugins/net_faulty.c tests/plugins/tuner_rules.c \
                                              include/baton/plugin_net.h include/baton/plugin_tuner.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 $(WARN) -fPIC -shared -fvisibility=hidden -Iinclude -DNET_ZERO_DEVICES \
	  tests/plugins/net_faulty.c tests/plugins/tuner_rules.c -o $@
$(TEST_PLUGIN_DIR)/libnccl-net-v6only.so: $(NET_PLUGIN_OBJS:$(OBJ)/tools/net-plugin/baton_net_plugin.o=$(OBJ)/tools/net-plugin/baton_net_plugin_v6.o)
	@mkdir -p $(dir $@)
	$(CXX) -shared -Wl,--no-undefined -Wl,--version-script=tools/net-plugin/export.map -o $@ $^ $(LDFLAGS) -lpthread
$(TEST_PLUGIN_DIR)/libnccl-tuner-none.so $(TEST_PLUGIN_DIR)/libnccl-profiler-none.so $(TEST_PLUGIN_DIR)/libnccl-net-none.so: tests/plugins/not_a_tuner.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 $(WARN) -fPIC -shared -fvisibility=hidden $< -o $@

tests: $(TEST_BINS) tools examples $(ABI_TEST) $(GPU_TEST) $(TEST_PLUGINS) fuzz-replay

$(OBJ)/tests/%.o: CPPFLAGS += -Itests
$(TESTDIR)/unit_tests: $(TEST_OBJS_U) $(ARCHIVE)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(TEST_OBJS_U) $(ARCHIVE) $(GTEST_LIBS) $(LDFLAGS) $(SYS_LIBS)
$(TESTDIR)/collective_tests: $(TEST_OBJS_C) $(ARCHIVE)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(TEST_OBJS_C) $(ARCHIVE) $(GTEST_LIBS) $(LDFLAGS) $(SYS_LIBS)
$(TESTDIR)/rank_worker: $(OBJ)/tests/process/rank_worker.o $(OBJ)/tests/process/coll_check.o $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $(OBJ)/tests/process/rank_worker.o $(OBJ)/tests/process/coll_check.o -L$(LIBDIR) -Wl,-rpath,$(abspath $(LIBDIR)) -lnccl $(LDFLAGS)
.SECONDARY: $(OBJ)/tests/process/shrink_worker.o $(OBJ)/tests/process/fault_worker.o $(OBJ)/tests/process/soak_worker.o \
            $(OBJ)/tests/process/fused_worker.o $(OBJ)/tests/process/hang_worker.o $(OBJ)/tests/process/ras_worker.o
$(TESTDIR)/%_worker: $(OBJ)/tests/process/%_worker.o $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $< -L$(LIBDIR) -Wl,-rpath,$(abspath $(LIBDIR)) -lnccl $(LDFLAGS)

$(TESTDIR)/gpu_%: tests/gpu/gpu_%.cc tests/gpu/gpu_check.h $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(NVCC) -std=c++17 -O2 -x c++ $(if $(NVIDIA_NCCL_H),,-Iinclude) $< -o $@ -L$(LIBDIR) \
	  -Xlinker --enable-new-dtags,-rpath,'$$ORIGIN/../lib' -lnccl

$(TESTDIR)/nvidia_header_test: tests/abi/nvidia_header_test.cc $(SO) $(LIBDIR)/libnccl.so
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -O2 -Wall -Werror -I$(CUDA_HOME)/include $< -o $@ -L$(LIBDIR) -lnccl -pthread

include tests/fuzz/fuzz.mk

# The ThreadSanitizer build of the protocol and collective tests (its own obj/lib folders). The three
# Large cases run the direct AllGather and ReduceScatter of thread ranks (from 64 KiB, with Simple).
TSAN_TESTS := $(BUILD)/tests-thread/collective_tests
TSAN_FILTER ?= Protocol*:Threads*Quick*:TreeQuick*:FusedThreads*:DeviceApiThreads*:AlltoAllAlgo.Grouped*:Moe*:AllGatherLarge.Large/float_3ranks:ReduceScatterLarge.Large/float_3ranks:ReduceScatterLarge.Large/bfloat16_2ranks:BroadcastLarge.Large/float_3ranks:ReduceLarge.Large/float_3ranks
tsan-build:
	$(MAKE) SANITIZE=thread OPT=-O1 $(TSAN_TESTS)

# README's two commands install what is missing first, then build in a second make (which reads the
# flags of the packages just installed).
deps-if-missing:
	@if ! tools/install-deps.sh --check >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "baton: installing missing Debian packages with tools/install-deps.sh"; tools/install-deps.sh; \
	  else echo "baton: some packages are missing; run: sudo tools/install-deps.sh"; tools/install-deps.sh --check || true; fi; \
	fi
test: deps-if-missing
	+$(MAKE) --no-print-directory test-now
sweep: deps-if-missing
	+$(MAKE) --no-print-directory sweep-now

test-now: all cuda tests tsan-build
	BATON_BUILD=$(BUILD) TESTDIR=$(TESTDIR) NVIDIA_HEADER_TEST=$(ABI_TEST) TSAN_TESTS=$(TSAN_TESTS) \
	  TSAN_FILTER='$(TSAN_FILTER)' FUZZ_NAMES='$(FUZZ_NAMES)' tests/run_all.sh

# The AddressSanitizer + UndefinedBehaviorSanitizer build of the tests and workers (own folders).
ASAN_DIR  := $(BUILD)/tests-address-undefined
ASAN_BINS := $(ASAN_DIR)/unit_tests $(ASAN_DIR)/collective_tests $(ASAN_DIR)/rank_worker $(ASAN_DIR)/fault_worker \
             $(ASAN_DIR)/shrink_worker
asan-build:
	$(MAKE) SANITIZE=address,undefined OPT=-O1 $(ASAN_BINS)
# Not in `make test`: the sanitized build alone takes about 16 minutes on 2 cores (docs/testing.md).
test-asan: all asan-build
	tests/run_asan.sh $(BUILD) $(ASAN_DIR)

# Random collectives for SOAK_SECONDS on 4 processes, then on two namespaced hosts (tests/soak/soak.sh).
SOAK_SECONDS ?= 300
soak: all tests
	tests/soak/soak.sh $(BINDIR) $(TESTDIR) $(SOAK_SECONDS)

test-tsan: tsan-build
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(TSAN_TESTS) --gtest_filter='$(TSAN_FILTER)'


# README's first command: build, then an allreduce sweep over 4 local processes.
sweep-now: all
	$(BINDIR)/baton-run -n 4 --no-prefix $(BINDIR)/baton-perf allreduce -b 8 -e 64M -f 2

bench: all
	tools/scripts/bench.sh

stress: all tests
	BATON_BUILD=$(BUILD) TESTDIR=$(TESTDIR) tests/stress.sh

# The fault-injection suite's long mode (lesson 10): 100+ trials, figures for docs/fault-tolerance.md.
fault-long: all tests
	tests/fault/fault_injection.sh --trials 120 $(TESTDIR)

lessons: all
	tests/lessons/run_lessons.sh $(BUILD)

deps:
	tools/install-deps.sh

# Laid out as an NCCL install (tools/install/install.sh lists the files).
PREFIX ?= /usr/local
install: lib tools
	tools/install/install.sh install $(BUILD) $(PREFIX) $(DESTDIR)
uninstall:
	tools/install/install.sh uninstall $(PREFIX) $(DESTDIR)
DEBDIR ?= $(BUILD)
deb: lib tools
	tools/install/deb.sh $(BUILD) $(DEBDIR)

format:
	git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i --style=file

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
