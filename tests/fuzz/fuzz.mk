# Fuzz targets (tests/fuzz/README.md), included by the Makefile.
#
#   make fuzz-replay   each target as a plain g++ program over its corpus and regressions (make test runs it)
#   make fuzz-build    each target under libFuzzer with clang, ASan and UBSan (build/fuzz/<name>_fuzz)
#   make fuzz          runs every libFuzzer target FUZZ_SECONDS (default 60) and prints a table
FUZZ_NAMES   := topo_xml tuning_file env_syntax launch_env bootstrap_msg watchdog_msg net_frame sim_input
FUZZ_SECONDS ?= 60
FUZZ_CXX     ?= clang++

# The replay runners: the target's own file plus replay_main.cc, linked with the archive.
FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(TESTDIR)/fuzz/%_replay)
$(OBJ)/tests/fuzz/%.o: CPPFLAGS += -Itests/fuzz
$(TESTDIR)/fuzz/%_replay: $(OBJ)/tests/fuzz/%_fuzz.o $(OBJ)/tests/fuzz/replay_main.o $(ARCHIVE)
	@mkdir -p $(dir $@)
	$(CXX) -o $@ $< $(OBJ)/tests/fuzz/replay_main.o $(ARCHIVE) $(LDFLAGS) $(SYS_LIBS)
fuzz-replay: $(FUZZ_REPLAYS)

# The libFuzzer build: the library's sources compiled again by clang with the fuzzer's coverage
# instrumentation, ASan and UBSan (its own object folder), one program per target.
FUZZ_OBJ   := $(BUILD)/obj-fuzz
FUZZ_FLAGS := -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
              -pthread $(HWLOC_CFLAGS)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.cc=$(FUZZ_OBJ)/%.o)
$(FUZZ_OBJ)/%.o: %.cc
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(CPPFLAGS) -Itests/fuzz $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(BUILD)/fuzz/%_fuzz: $(FUZZ_OBJ)/tests/fuzz/%_fuzz.o $(FUZZ_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CXX) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJS) $(SYS_LIBS)
fuzz-build: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%_fuzz)

fuzz: fuzz-build
	tests/fuzz/run_fuzz.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_NAMES)

# Objects reached only through pattern rules are kept (make would delete them as intermediates).
.SECONDARY: $(FUZZ_NAMES:%=$(OBJ)/tests/fuzz/%_fuzz.o) $(OBJ)/tests/fuzz/replay_main.o \
            $(FUZZ_NAMES:%=$(FUZZ_OBJ)/tests/fuzz/%_fuzz.o) $(FUZZ_LIB_OBJS)
