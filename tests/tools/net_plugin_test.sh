#!/usr/bin/env bash
# NCCL_NET_PLUGIN (lesson 16): external network plugins carry the NET transport's bytes. Two ranks
# on this host with shared memory and P2P off, so every connection is NET: baton's own socket
# plugin (libnccl-net-baton.so, ncclNetPlugin_v11) and a v6-only build of it, loaded by the name
# rules; NCCL_NET choosing among plugin and built-in back-ends; then plugins that go wrong (no
# table, init fails, 0 devices, connect fails: tests/plugins/net_faulty.c), each named in one line,
# with baton on its own network and results exact, or a clear error and no hang; and tables of
# versions NCCL 2.28 does not accept (v5, v12). The 2-host run
# through the plugin is the suite "net-multihost-plugin".
#   usage: tests/tools/net_plugin_test.sh BUILD_DIR    (make test's suite "net-plugin", ~40 s)
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
# shellcheck source=tests/tools/plugin_checks.sh
source "$(dirname "$0")/plugin_checks.sh"
LIB=$(cd "$BUILD/lib" && pwd)
export NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV

# run PLUGIN [ENV=VAL...]: 2 ranks, an AllReduce sweep over every protocol's sizes, results checked.
run() {
  local plugin=$1; shift
  set +e
  env NCCL_NET_PLUGIN="$plugin" "$@" timeout 120 "$BIN/baton-run" -n 2 "$BIN/baton-perf" allreduce \
    -b 8 -e 4M -f 8 -n 2 -w 1 -c 1 >"$TMP/out" 2>&1
  rc=$?
  set -e
}
both() { [[ $(count "$1") -ge 2 ]]; }  # both ranks said it

# 1. baton's socket back-end as a plugin, by its short name (found on LD_LIBRARY_PATH).
run baton LD_LIBRARY_PATH="$LIB"
check "NCCL_NET_PLUGIN=baton: libnccl-net-baton.so's ncclNetPlugin_v11 carries every NET connection, exact" \
  eval 'both "Initialized baton-socket ($LIB/libnccl-net-baton.so, ncclNetPlugin_v11) with 1 device" &&
        both "NET: using network plugin baton-socket" && has "via NET" && exact'

# 2. A plugin exporting only ncclNetPlugin_v6 (int sizes, no device handles), by path.
run "$PLUG/libnccl-net-v6only.so"
check "a v6-only socket plugin (by path): loaded as ncclNetPlugin_v6, every connection through it, exact" \
  eval 'both "ncclNetPlugin_v6) with 1 device" && both "NET: using network plugin baton-socket" && exact'

# 3. NCCL_NET picks among the plugins and the built-in back-ends by name.
run baton LD_LIBRARY_PATH="$LIB" NCCL_NET=baton-socket
check "NCCL_NET=baton-socket names the plugin: exact" eval 'both "Initialized baton-socket" && exact'
run baton LD_LIBRARY_PATH="$LIB" NCCL_NET=Socket
check "NCCL_NET=Socket with the plugin loaded: the built-in back-end, exact" \
  eval 'both "Initialized baton-socket" && ! has "using network plugin" && exact'
run baton LD_LIBRARY_PATH="$LIB" NCCL_NET=nosuch
check "NCCL_NET=nosuch: an error listing the plugin's and the built-in names, no hang" \
  eval '[[ $rc != 0 && $rc != 124 ]] && has "NCCL_NET='"'"'nosuch'"'"' names no network back-end (there are '"'"'baton-socket'"'"', '"'"'Socket'"'"' and '"'"'IB'"'"')"'
run none
check "NCCL_NET_PLUGIN=none: no plugin looked for, the built-in sockets, exact" \
  eval '! has "NET/Plugin" && has "NET/Socket" && exact'

# 4. Plugins that go wrong: one line each, then baton's own network.
run "$PLUG/libnccl-net-none.so"
check "a library with no ncclNetPlugin table: 'unsupported', the built-in sockets, exact" \
  eval 'both "exports no ncclNetPlugin_v6 .. _v11: external network plugin" && ! has "using network plugin" && exact'
for v in 5 12; do
  run "$PLUG/libnccl-net-v$v.so"
  check "a library exporting only ncclNetPlugin_v$v (a version NCCL 2.28 does not accept): 'unsupported', the built-in sockets, exact" \
    eval 'both "libnccl-net-v$v.so exports no ncclNetPlugin_v6 .. _v11: external network plugin" && ! has "using network plugin" && exact'
done
run "$PLUG/libnccl-net-failinit.so"
check "a plugin whose init fails: named, the built-in sockets, exact" \
  eval 'both "Faulty ($PLUG/libnccl-net-failinit.so, ncclNetPlugin_v8): init failed; not using it" && exact'
run "$PLUG/libnccl-net-zerodev.so"
check "a plugin with 0 devices: named, the built-in sockets, exact" \
  eval 'both "ncclNetPlugin_v8): 0 devices; not using it" && exact'
run "$TMP/nosuch/libnccl-net-gone.so"
check "a plugin path that does not exist: 'Could not find' it, the built-in sockets, exact" \
  eval 'both "NET/Plugin: Could not find: $TMP/nosuch/libnccl-net-gone.so" && exact'
start=$SECONDS
run "$PLUG/libnccl-net-failconn.so"
check "a plugin whose connect fails: every rank fails naming the plugin and the call, within 60 s" \
  eval '[[ $rc != 0 && $rc != 124 ]] && (( SECONDS - start < 60 )) &&
        both "NET/Plugin Faulty ($PLUG/libnccl-net-failconn.so): connect returned ncclSystemError"'

# 5. NCCL's last resort for a tuner: with no tuner library found, the network plugin's library is
#    searched for one. This one has no device (so the built-in sockets carry the data) and a tuner
#    whose rule forces Ring/Simple on 1 channel below 1 KiB.
printf 'allreduce,0,1024,ring,simple,1\n' >"$TMP/rules.csv"
run "$PLUG/libnccl-net-withtuner.so" NCCL_TUNER_CONFIG_FILE="$TMP/rules.csv" NCCL_DEBUG_SUBSYS=INIT,NET,ENV,TUNING,COLL
check "a network plugin library that carries a tuner: with no tuner library, its tuner steers baton, exact" \
  eval 'both "TUNER/Plugin: no TUNER library of its own: using the network plugin'"'"'s, $PLUG/libnccl-net-withtuner.so" &&
        both "TUNER/Plugin: Using rules (v5)" &&
        grep -q "AllReduce: opCount .* count 2 datatype float .*algorithm Ring protocol Simple channels 1 tuner plugin" "$TMP/out" &&
        exact'

finish
