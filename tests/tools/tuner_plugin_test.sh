#!/usr/bin/env bash
# NCCL_TUNER_PLUGIN (lesson 16): real tuner plugins, written in C against the interface header
# (tests/plugins/tuner_rules.c, one library per version and per failure), loaded by baton-perf on 2
# processes and on 2 thread ranks. Each check reads the COLL INFO lines (what ran) and the
# out-of-bounds count (the results are exact), so a plugin that was loaded but not applied fails.
#   usage: tests/tools/tuner_plugin_test.sh BUILD_DIR    (make test's suite "tuner-plugin", ~30 s)
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
# shellcheck source=tests/tools/plugin_checks.sh
source "$(dirname "$0")/plugin_checks.sh"

# The rules: forced pairs at three sizes, a pair baton does not build, a forbidden pair, and a
# latency the v5 plugin writes into the constants at init.
cat >"$TMP/rules.csv" <<'EOF'
# collective,minBytes,maxBytes,algorithm,protocol,channels
allreduce,0,1024,ring,simple,1
allreduce,1025,65536,tree,ll128,2
allreduce,2000000,3000000,ring,simple,forbid
allgather,0,100000000,ring,ll,-1
broadcast,0,100000000,nvls,simple,-1
latency,ring,ll128,3.5,0.25
EOF
export NCCL_TUNER_CONFIG_FILE=$TMP/rules.csv NCCL_MIN_NCHANNELS=2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,COLL,ENV

# run PLUGIN ARGS...: baton-perf with NCCL_TUNER_PLUGIN=PLUGIN ("" leaves it unset); output in $TMP/out.
run() {
  local plugin=$1; shift
  set +e
  if [[ -n $plugin ]]; then NCCL_TUNER_PLUGIN=$plugin timeout 120 "$@" >"$TMP/out" 2>&1; rc=$?
  else (unset NCCL_TUNER_PLUGIN; timeout 120 "$@" >"$TMP/out" 2>&1); rc=$?; fi
  set -e
}
# The sizes: 512 B (rule 1), 32 KiB (rule 2), 2 MiB (rule 3: baton's Ring/Simple forbidden).
AR=(allreduce -b 512 -e 2M -f 64 -n 2 -w 1 -c 1)
# coll_line SIZE_BYTES: the COLL INFO lines of AllReduces of that many bytes (count * 4, float).
coll_at() { grep -E "AllReduce: opCount .* count $(($1 / 4)) datatype float .*algorithm" "$TMP/out" || true; }
all_say() {  # all_say BYTES TEXT: every AllReduce of that size says TEXT, and there is one
  local lines; lines=$(coll_at "$1")
  [[ -n $lines ]] && ! grep -vqF -- "$2" <<<"$lines"
}
none_say() { local lines; lines=$(coll_at "$1"); [[ -n $lines ]] && ! grep -qF -- "$2" <<<"$lines"; }

# 1. v5 on 2 processes: every rule as NCCL applies it.
run "$PLUG/libnccl-tuner-rules.so" "$BIN/baton-run" -n 2 "$BIN/baton-perf" "${AR[@]}"
check "v5, 2 processes: loaded, named, its init logged through NCCL's logger" \
  eval 'has "TUNER/Plugin: Using rules (v5)" && has "rules tuner: init nRanks 2 nNodes 1, 6 rules"'
check "v5: 512 B forced to Ring/Simple on 1 channel" all_say 512 "algorithm Ring protocol Simple channels 1"
check "v5: 32 KiB forced to Tree/LL128 on 2 channels" all_say 32768 "algorithm Tree protocol LL128 channels 2 tuner plugin"
check "v5: 2 MiB: baton's Ring/Simple forbidden, another pair taken" \
  eval 'all_say 2097152 "tuner plugin" && none_say 2097152 "algorithm Ring protocol Simple"'
check "v5: the latency written in init reaches baton's model" has "TUNER/Plugin: Ring/LL128 latency 3.50 + 0.25 us per hop"
check "v5: results exact, exit 0" exact
check "v5: closed at the end" has "TUNER/Plugin: Closing tuner: 'rules'"

# 2. Older versions on 2 thread ranks: the same choices through the adapters.
for v in 4 3 2; do
  run "$PLUG/libnccl-tuner-rules$v.so" "$BIN/baton-perf" "${AR[@]}" -t 2
  check "v$v, 2 threads: loaded as v$v, 512 B Ring/Simple, 32 KiB Tree/LL128 x2, exact" eval \
    'has "TUNER/Plugin: Using rules-v'$v' (v'$v')" && all_say 512 "algorithm Ring protocol Simple channels 1" &&
     all_say 32768 "algorithm Tree protocol LL128 channels 2 tuner plugin" && exact'
done

# 3. Another collective, and an algorithm baton does not build (NVLS): said, not taken.
run "$PLUG/libnccl-tuner-rules.so" "$BIN/baton-perf" broadcast -t 2 -b 4K -e 4K -n 1 -w 0 -c 1
check "NVLS forced for Broadcast: INFO says baton does not run it; Ring ran, exact" eval \
  'has "chose algorithm 4 for Broadcast, which baton does not run" && has "Broadcast: opCount" && exact'
run "$PLUG/libnccl-tuner-rules.so" "$BIN/baton-perf" allgather -t 2 -b 4K -e 4K -n 1 -w 0 -c 1
check "AllGather forced to LL" eval 'grep "AllGather: opCount" "$TMP/out" | grep -v "count 64 datatype uint8" | grep -q "protocol LL channels" && exact'

# 4. Plugins that fail: the communicator stays up on baton's own tuner.
run "$PLUG/libnccl-tuner-failinit.so" "$BIN/baton-run" -n 2 "$BIN/baton-perf" "${AR[@]}"
check "init fails: a WARN naming the plugin and file, baton's own choice, exact" eval \
  'has "TUNER/Plugin: rules ($PLUG/libnccl-tuner-failinit.so): init returned 3" && none_say 32768 "tuner plugin" && exact'
run "$PLUG/libnccl-tuner-failcoll.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "getCollInfo fails: one WARN per communicator, baton's own choice, exact" eval \
  '[[ $(count "getCollInfo returned 3") == 2 ]] && none_say 32768 "tuner plugin" && exact'
run "$PLUG/libnccl-tuner-none.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "no tuner symbol: INFO 'unsupported', exact" eval 'has "is unsupported" && none_say 512 "tuner plugin" && exact'

run "$PLUG/libnccl-tuner-v6only.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "a version baton does not know (only ncclTunerPlugin_v6): 'unsupported', exact" \
  eval 'has "exports no ncclTunerPlugin_v5" && has "is unsupported" && none_say 32768 "tuner plugin" && exact'
run "$PLUG/libnccl-tuner-garbage.so" "$BIN/baton-run" -n 2 "$BIN/baton-perf" "${AR[@]}"
check "NaN and negative costs, 1000 channels: baton's own pair, channels capped at the communicator's 2, exact" \
  eval 'has "left no pair baton runs" && all_say 2097152 "channels 2 " && all_say 2097152 "tuner plugin" && exact'

# 5. NCCL's library-name rules.
run nosuch "$BIN/baton-perf" "${AR[@]}" -t 2
check "a short name that exists nowhere: both names listed as not found" \
  eval 'has "TUNER/Plugin: Could not find: nosuch libnccl-tuner-nosuch.so" && exact'
LD_LIBRARY_PATH=$PLUG run rules "$BIN/baton-perf" "${AR[@]}" -t 2
check "short name 'rules' finds libnccl-tuner-rules.so on the library path" \
  eval 'has "Successfully loaded external tuner plugin" && all_say 32768 "tuner plugin" && exact'
run "" "$BIN/baton-perf" "${AR[@]}" -t 2
check "unset: libnccl-tuner.so looked for, not found, nothing applied" \
  eval 'has "Could not find: libnccl-tuner.so" && none_say 32768 "tuner plugin" && exact'
run none "$BIN/baton-perf" "${AR[@]}" -t 2
check "NCCL_TUNER_PLUGIN=none: nothing opened" eval '! has "TUNER/Plugin:" && none_say 32768 "tuner plugin" && exact'

# 6. --explain shows the plugin's pick beside baton's.
NCCL_DEBUG=WARN run "$PLUG/libnccl-tuner-rules.so" "$BIN/baton-perf" allreduce -t 2 -b 512 -e 32K -f 64 --explain
check "--explain: the plugin named, its pick in its own column" eval \
  'has "# tuner plugin: rules (v5)" && grep -E "^ +32768 .* Tree/LL128 \(2\)$" "$TMP/out" >/dev/null'

# 7. baton's own calibration as a tuner plugin (libnccl-tuner-baton.so, what NVIDIA's NCCL would load).
BATON_PLUGIN=$(cd "$BUILD/lib" && pwd)/libnccl-tuner-baton.so
export BATON_TUNER_PLUGIN_PATH=shm
NCCL_DEBUG=WARN BATON_TUNING_FILE=none run "$BATON_PLUGIN" "$BIN/baton-run" -n 2 --no-prefix "$BIN/baton-perf" \
  allreduce -b 8 -e 64M -f 8 --explain
# Every size row: baton's choice (next to last field) and the plugin's (last) are one pair.
agree() { awk '/^ +[0-9]+ /{ n++; if ($(NF-1) != $NF) bad++ } END { exit !(n >= 8 && bad == 0) }' "$TMP/out"; }
check "baton's plugin, same (built-in) model: its pick equals baton's own at every size, 8 B to 64 MiB" \
  eval 'has "# tuner plugin: baton (v5)" && agree'
# A calibration that makes Tree/LL128 nearly free: the plugin, reading it, moves baton (on the built-in
# model itself) to Tree/LL128.
printf '# path algorithm protocol base_us hop_us busbw_GBs\nshm Tree LL128 0.01 0.01 1000\n' >"$TMP/cheap-tree.txt"
BATON_TUNING_FILE=none BATON_TUNER_PLUGIN_FILE=$TMP/cheap-tree.txt run "$BATON_PLUGIN" "$BIN/baton-run" -n 2 \
  "$BIN/baton-perf" "${AR[@]}"
check "baton's plugin with its own tuning file steers baton: 2 MiB on Tree/LL128, exact" eval \
  'has "baton tuner: model from $TMP/cheap-tree.txt, '"'"'shm'"'"' table, 2 ranks on 1 nodes" &&
   all_say 2097152 "algorithm Tree protocol LL128" && all_say 2097152 "tuner plugin" && exact'
BATON_TUNER_PLUGIN_FILE=$TMP/missing.txt run "$BATON_PLUGIN" "$BIN/baton-perf" "${AR[@]}" -t 2
check "baton's plugin naming a missing file: init fails, named; baton's own tuner, exact" eval \
  'has "tuning file $TMP/missing.txt: cannot open" && has "init returned 2" && none_say 2097152 "tuner plugin" && exact'
unset BATON_TUNER_PLUGIN_PATH

finish
