#!/usr/bin/env bash
# NCCL_ENV_PLUGIN (lesson 16): an env plugin in C (tests/plugins/env_file.c) answers every variable
# the library reads. The checks read what the library did with the values (COLL INFO lines, the
# results' check), not only that the plugin loaded, on 2 processes and on 2 thread ranks.
#   usage: tests/tools/env_plugin_test.sh BUILD_DIR    (make test's suite "env-plugin", ~10 s)
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
# shellcheck source=tests/tools/plugin_checks.sh
source "$(dirname "$0")/plugin_checks.sh"
# run PLUGIN CMD...: CMD with NCCL_ENV_PLUGIN=PLUGIN; output (both streams) in $TMP/out.
run() {
  local plugin=$1; shift
  set +e; NCCL_ENV_PLUGIN=$plugin timeout 120 "$@" >"$TMP/out" 2>&1; rc=$?; set -e
}
colls() { grep -E "AllReduce: opCount .* count 262144 datatype float" "$TMP/out" || true; }
all_colls() { local l; l=$(colls); [[ -n $l ]] && ! grep -vqF -- "$1" <<<"$l"; }

# The process says Simple on 1 channel; the plugin's file says LL on 2 channels. The plugin wins.
printf 'NCCL_PROTO=LL\nNCCL_MIN_NCHANNELS=2\n' >"$TMP/env.txt"
export BATON_TEST_ENV_FILE=$TMP/env.txt NCCL_PROTO=Simple NCCL_MAX_NCHANNELS=2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,COLL
AR=(allreduce -b 1M -e 1M -n 2 -w 1 -c 1)

run "$PLUG/libnccl-env-file.so" "$BIN/baton-run" -n 2 "$BIN/baton-perf" "${AR[@]}"
check "2 processes: loaded, init told NCCL 2.28.9" \
  eval 'has "Successfully loaded external env plugin file" && has "env plugin: init for NCCL 2.28.9"'
check "2 processes: the plugin's NCCL_PROTO=LL and NCCL_MIN_NCHANNELS=2 rule, not the process's Simple" \
  all_colls "protocol LL channels 2"
check "2 processes: results exact, the plugin finalized at exit" eval 'exact && has "env plugin: finalize"'

run "$PLUG/libnccl-env-file.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "2 thread ranks: the plugin's values rule, exact" eval 'all_colls "protocol LL channels 2" && exact'

# Short name: libnccl-env-file.so on the library path.
LD_LIBRARY_PATH=$PLUG run file "$BIN/baton-perf" "${AR[@]}" -t 2
check "short name 'file' finds libnccl-env-file.so" eval 'has "Successfully loaded external env plugin" && all_colls "protocol LL"'

# Failures: the process environment is read instead (the process's Simple), nothing else changes.
run "$PLUG/libnccl-env-failinit.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "init fails: WARN naming the file, the process environment read, exact" eval \
  'has "ENV/Plugin: file ($PLUG/libnccl-env-failinit.so): init returned 3" && all_colls "protocol Simple" && exact'
run "$PLUG/libnccl-tuner-none.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "a library without ncclEnvPlugin_v1: 'unsupported', the process environment read" \
  eval 'has "external env plugin" && has "is unsupported" && all_colls "protocol Simple" && exact'
run nosuch "$BIN/baton-perf" "${AR[@]}" -t 2
check "a name found nowhere: both names listed, the process environment read" \
  eval 'has "ENV/Plugin: Could not find: nosuch libnccl-env-nosuch.so" && all_colls "protocol Simple" && exact'
run none "$BIN/baton-perf" "${AR[@]}" -t 2
check "NCCL_ENV_PLUGIN=none: nothing opened" eval '! has "ENV/Plugin" && all_colls "protocol Simple" && exact'

# NCCL_TUNER_PLUGIN is itself read through the env plugin (as NCCL's ncclGetEnv): the file names the tuner.
# (The tuner reads its own rules file from the process environment: plugins read theirs themselves.)
# NCCL_PROTO=^LL leaves LL128 to the tuner, which the process's NCCL_PROTO=Simple would forbid.
printf 'NCCL_TUNER_PLUGIN=%s\nNCCL_PROTO=^LL\n' "$PLUG/libnccl-tuner-rules.so" >"$TMP/env.txt"
printf 'allreduce,0,100000000,ring,ll128,-1\n' >"$TMP/rules.csv"
NCCL_TUNER_CONFIG_FILE=$TMP/rules.csv NCCL_DEBUG_SUBSYS=INIT,ENV,COLL,TUNING run "$PLUG/libnccl-env-file.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "NCCL_TUNER_PLUGIN given by the env plugin loads that tuner, which forces LL128" \
  eval 'has "TUNER/Plugin: Using rules (v5)" && all_colls "protocol LL128" && all_colls "tuner plugin" && exact'

finish
