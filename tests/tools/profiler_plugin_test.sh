#!/usr/bin/env bash
# NCCL_PROFILER_PLUGIN (lesson 13): a real profiler plugin, written in C against the interface header
# (tests/plugins/profiler_tree.c, one library per version and per failure), loaded by baton-perf on
# 4 processes over NET and on 4 thread ranks. The plugin writes every event it was given; the tree
# checker (profiler_tree_check.py) asserts NCCL's parents, times inside parents, one KernelCh per
# channel and the states, so a host that skips an event or mislinks one fails here.
#   usage: tests/tools/profiler_plugin_test.sh BUILD_DIR    (make test's suite "profiler-plugin", ~40 s)
set -euo pipefail

BUILD=${1:?usage: $0 BUILD_DIR}
# shellcheck source=tests/tools/plugin_checks.sh
source "$(dirname "$0")/plugin_checks.sh"
BUILD_ABS=$(cd "$BUILD" && pwd)
TREE="python3 $(dirname "$0")/profiler_tree_check.py"
export BATON_TEST_PROFILE_DIR=$TMP/prof NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV

# run PLUGIN ARGS...: baton-perf with NCCL_PROFILER_PLUGIN=PLUGIN, a fresh profile directory.
run() {
  local plugin=$1; shift
  rm -rf "$TMP/prof"; mkdir -p "$TMP/prof"
  set +e
  NCCL_PROFILER_PLUGIN=$plugin timeout 120 "$@" >"$TMP/out" 2>&1; rc=$?
  set -e
}
tree() { $TREE "$TMP/prof" "$@" >>"$TMP/out" 2>&1; }
files() { find "$TMP/prof" -type f | wc -l; }

# 1. v5, 4 processes, every connection through NET, 2 channels. Each size runs 1 warm-up + 2 timed +
#    1 check AllReduce, out of place and in place: 8 (baton-perf adds a few of 8 B for its timing).
AR=(allreduce -b 8 -e 512K -f 256 -n 2 -w 1 -c 1)
NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_MIN_NCHANNELS=2 run "$PLUG/libnccl-profiler-tree.so" \
  "$BIN/baton-run" -n 4 "$BIN/baton-perf" "${AR[@]}"
check "v5, 4 processes over NET: loaded, init told rank and size, exact" \
  eval 'has "PROFILER/Plugin: Using tree (v5)" && has "tree profiler: init rank 3 of 4" && exact'
check "v5 over NET: a file per rank; Coll under CollApi and Group, a KernelCh and a send and a receive ProxyOp per channel, steps under their ProxyOp, times nested, every step sent received; the proxy thread's ProxyCtrl Append, Idle and Active" \
  eval '[[ $(files) == 4 ]] && tree --net && grep -q "type=ProxyStep" "$TMP"/prof/*'
each_has_some() {  # every rank's file has an event matching PATTERN
  local f; for f in "$TMP"/prof/*; do grep -q -- "$1" "$f" || return 1; done
}
each_has() {  # each_has N PATTERN: every rank's file has N events matching PATTERN
  local f; for f in "$TMP"/prof/*; do [[ $(grep -c -- "$2" "$f") == "$1" ]] || return 1; done
}
check "v5 over NET, built-in sockets: a NetPlugin event per send request (NCCL's socket data) under its ProxyStep" \
  eval 'each_has_some "type=NetPlugin"'
check "v5 over NET: every rank saw its 8 AllReduces of 2 KiB and of 512 KiB as Coll events" \
  eval 'each_has 8 "type=Coll .*func=AllReduce.* count=512 " && each_has 8 "type=Coll .*func=AllReduce.* count=131072 "'
check "v5 over NET: the 512 KiB AllReduces ran on 2 channels, 2 KernelCh each" \
  eval 'grep -q "type=Coll .*func=AllReduce algo=Ring proto=[A-Za-z0-9]* nch=2 .*count=131072" "$TMP"/prof/*'

NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 run "$PLUG/libnccl-profiler-tree.so" \
  "$BIN/baton-run" -n 4 "$BIN/baton-perf" broadcast -b 8 -e 512K -f 256 -n 2 -w 1 -c 1
check "v5 over NET, Broadcast: the ring's last rank sends nothing, and its empty ProxyOps still end (every Coll ends)" \
  eval 'tree --net && exact'

NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_ALGO=allreduce:tree run "$PLUG/libnccl-profiler-tree.so" \
  "$BIN/baton-run" -n 4 "$BIN/baton-perf" "${AR[@]}"
check "v5 over NET, Tree AllReduce: ProxyOps on the tree's connections both ways, every step sent received under the same collective" \
  eval 'tree --net && grep -q "type=Coll .*algo=Tree" "$TMP"/prof/* && grep -q "type=ProxyOp .*send=0" "$TMP"/prof/* && exact'

NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_NET_PLUGIN=baton LD_LIBRARY_PATH=$BUILD/lib \
  run "$PLUG/libnccl-profiler-tree.so" "$BIN/baton-run" -n 4 "$BIN/baton-perf" "${AR[@]}"
check "v5 over a network plugin (libnccl-net-baton.so, v11): its socket events (NetPlugin, NCCL's socket data) under their send steps, tree complete" \
  eval 'tree --net && each_has_some "type=NetPlugin" && exact'

# 2. 4 thread ranks: one thread's GroupApi holds the other ranks' calls when it drives them all.
run "$PLUG/libnccl-profiler-tree.so" "$BIN/baton-perf" allreduce -t 4 -b 8 -e 1M -f 32 -n 2 -w 1 -c 1
check "v5, 4 threads: tree complete, exact" eval 'tree && exact'
run "$PLUG/libnccl-profiler-tree.so" "$BIN/baton-perf" sendrecv -t 4 -b 4K -e 64K -f 16 -n 2 -w 1 -c 1
check "v5, Send/Recv: P2p under P2pApi and Group, a KernelCh each, exact" \
  eval 'tree && grep -q "type=P2p .*func=Send" "$TMP"/prof/* && grep -q "type=P2p .*func=Recv" "$TMP"/prof/* && exact'

# 3. The mask: the plugin asks for Coll events only (NCCL_PROFILE_EVENT_MASK, as NCCL's example).
NCCL_PROFILE_EVENT_MASK=2 run "$PLUG/libnccl-profiler-tree.so" "$BIN/baton-perf" allreduce -t 2 -b 4K -e 4K -n 2 -w 0 -c 1
check "mask 0x2: only Coll events, exact" eval 'tree --only Coll && exact'

# 4. v4: no API events; a Coll's parent is its Group.
run "$PLUG/libnccl-profiler-tree4.so" "$BIN/baton-perf" allreduce -t 4 -b 8 -e 1M -f 32 -n 2 -w 1 -c 1
check "v4: loaded as v4, Coll under Group, no API events, exact" \
  eval 'has "PROFILER/Plugin: Using tree-v4 (v4)" && tree --v4 --only Group,Coll,KernelCh && exact'

# 5. Plugins that fail or misbehave: named once, profiling off (or on with NULLs), results exact.
run "$PLUG/libnccl-profiler-failinit.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "init fails: INFO naming the plugin and file, no profile, exact" \
  eval 'has "tree ($PLUG/libnccl-profiler-failinit.so): init returned 3" && [[ $(files) == 0 ]] && exact'
run "$PLUG/libnccl-profiler-failstart.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "startEvent fails once: one WARN, that communicator profiles nothing more, exact" \
  eval '[[ $(count "startEvent returned 3") == 1 ]] && exact'
run "$PLUG/libnccl-profiler-null.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "NULL handles: no crash, exact" exact
run "$PLUG/libnccl-profiler-slow.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "a slow plugin (200 us per event): tree complete, exact" eval 'tree && exact'
run "$PLUG/libnccl-profiler-none.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "no profiler symbol: INFO 'unsupported', exact" eval 'has "external profiler plugin" && has "is unsupported" && exact'
run "$TMP/no-such-profiler.so" "$BIN/baton-perf" "${AR[@]}" -t 2
check "a path that does not exist: 'Could not find', exact" eval 'has "PROFILER/Plugin: Could not find" && exact'
run none "$BIN/baton-perf" "${AR[@]}" -t 2
check "NCCL_PROFILER_PLUGIN=none: nothing loaded, exact" eval '! has "PROFILER/Plugin: Using" && exact'

# 6. baton's own profiler (libnccl-profiler-baton.so, found by its short name on the loader's path):
#    a Perfetto trace and a summary line per collective per rank, merged by baton-prof.
export BATON_PROFILE_DIR=$TMP/bp
rm -rf "$BATON_PROFILE_DIR"; mkdir -p "$BATON_PROFILE_DIR"
NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_MIN_NCHANNELS=2 LD_LIBRARY_PATH=$BUILD/lib run baton \
  "$BIN/baton-run" -n 4 "$BIN/baton-perf" "${AR[@]}"
summaries() {  # every rank: 8 AllReduces of 512 KiB, 2 channels, NET send bytes counted, times > 0
  python3 - "$BATON_PROFILE_DIR" <<'PY'
import glob, json, sys
files = sorted(glob.glob(sys.argv[1] + "/*.jsonl"))
assert len(files) == 4, files
for f in files:
    rows = [json.loads(l) for l in open(f)]
    big = [r for r in rows if r["coll"] == "AllReduce" and r["bytes"] == 524288]
    assert len(big) == 8, (f, len(big))
    assert all(r["channels"] == 2 and r["algo"] == "Ring" and r["time_us"] > 0 and r["busbw_GBs"] > 0 for r in big), big[0]
    # each rank sends 2 (n - 1) / n of the buffer in a ring AllReduce
    assert all(r["net_send_bytes"] == 524288 * 2 * 3 // 4 for r in big), big[0]
    # and receives as much, attributed to the same AllReduce by the receive proxy
    assert all(r["net_recv_bytes"] == 524288 * 2 * 3 // 4 for r in big), big[0]
for f in glob.glob(sys.argv[1] + "/*.json"):
    t = json.load(open(f))
    assert any(e.get("name") == "send step" and e.get("cat") == "nccl" for e in t), f
PY
}
check "baton's profiler, 4 processes over NET: loaded by name, exact" \
  eval 'has "PROFILER/Plugin: Using baton (v5)" && has "baton profiler: comm" && exact'
check "baton's profiler: per rank a trace that is valid JSON with send steps, and a summary line per AllReduce with its NET bytes sent and received" \
  eval 'summaries >>"$TMP/out" 2>&1'
"$BIN/baton-prof" "$BATON_PROFILE_DIR" >"$TMP/prof.txt" 2>&1 || true
check "baton-prof: one row for the 512 KiB AllReduce, 8 calls, Ring/Simple on 2 channels, a NET share" \
  eval 'cat "$TMP/prof.txt" >>"$TMP/out"; grep -Eq "AllReduce +ncclFloat32 +524288 +Ring/Simple +2 +8 .* [0-9]+$" "$TMP/prof.txt"'
# 5. BATON_TRACE is a shorthand for baton's profiler: with NCCL_PROFILER_PLUGIN unset, the library
#    loads the copy beside it, and the profiler's spans join the library's own in that one file.
rm -rf "$BATON_PROFILE_DIR"/*
( unset NCCL_PROFILER_PLUGIN BATON_PROFILE_DIR
  cd "$TMP" && BATON_TRACE=$TMP/trace.json NCCL_SHM_DISABLE=1 NCCL_P2P_DISABLE=1 timeout 120 \
    "$BUILD_ABS/bin/baton-run" -n 2 "$BUILD_ABS/bin/baton-perf" allreduce -b 64K -e 64K -n 2 -w 1 -c 1 ) >"$TMP/out" 2>&1 && rc=0 || rc=$?
one_timeline() {  # valid JSON; both ranks; the library's FIFO steps and the profiler's collectives and NET sends
  python3 - "$TMP/trace.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
names = {(e.get("cat"), e.get("name")) for e in t}
lanes = {e["args"]["name"] for e in t if e.get("name") == "thread_name"}
assert {"rank 0", "rank 1"} <= {e["args"]["name"] for e in t if e.get("name") == "process_name"}
assert any(c == "step" for c, _ in names), "no library step spans"
assert ("nccl", "AllReduce 16384 x ncclFloat32") in names and ("nccl", "send step") in names, sorted(names)[:20]
assert "collectives (profiler)" in lanes and "channel 0 NET sends (profiler)" in lanes, lanes
PY
}
check "BATON_TRACE alone: baton's profiler loaded for it, its spans and the library's in one valid JSON file, no summaries in the working folder, exact" \
  eval 'grep -q "PROFILER/Plugin: NCCL_PROFILER_PLUGIN unset: loading /.*/libnccl-profiler-baton.so" "$TMP/out" &&
        one_timeline >>"$TMP/out" 2>&1 && ! ls "$TMP"/*.jsonl >/dev/null 2>&1 && exact'
rm -rf "$BATON_PROFILE_DIR"/*
"$BIN/baton-prof" "$BATON_PROFILE_DIR" >"$TMP/out" 2>&1 && rc=0 || rc=$?
check "baton-prof on a folder without summaries: exit 2, says so" eval '[[ $rc == 2 ]] && has "no profiler summaries"'

finish
