#!/usr/bin/env bash
# `make install` as a user meets it: into a temporary prefix and into a DESTDIR staging tree, then
# a program built against the prefix five ways (plain -I/-L flags with LD_LIBRARY_PATH, pkg-config
# nccl.pc with an rpath, pkg-config baton.pc, the static archive, CMake find_package(baton), a
# FindNCCL module given NCCL_ROOT), lesson 02's example with CMake, the program written against
# NVIDIA's nccl.h with pkg-config, each run and checked; then `make uninstall` leaves nothing.
#
#   tests/tools/install_test.sh BUILD
set -uo pipefail
BUILD=${1:?usage: install_test.sh BUILD}
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/install" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/baton-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }
check() {  # check NAME COMMAND...: runs it, expects exit 0 and "allreduce over 2 ranks OK"
  local name=$1 out
  shift
  if out=$("$@" 2>&1) && grep -q "allreduce over 2 ranks OK" <<<"$out"; then pass "$name: $(tail -n 1 <<<"$out")"; else
    flunk "$name"; sed 's/^/    | /' <<<"$out" | tail -n 20
  fi
}

cd "$ROOT"
if ! out=$(make --no-print-directory install BUILD="$BUILD" PREFIX="$P" 2>&1); then
  flunk "make install PREFIX=$P"; echo "$out" | tail -n 20; exit 1
fi
for f in include/nccl.h include/baton/tuner.h include/baton/plugin_tuner.h include/baton/plugin_profiler.h include/baton/plugin_net.h lib/libnccl-tuner-baton.so lib/libnccl-profiler-baton.so lib/libnccl-net-baton.so bin/baton-prof lib/libnccl.so.2 lib/libnccl.so lib/libnccl_static.a bin/baton-perf \
  bin/baton-run lib/pkgconfig/nccl.pc lib/pkgconfig/baton.pc lib/cmake/baton/batonConfig.cmake share/doc/baton/README.md; do
  [[ -e $P/$f ]] || flunk "make install did not install $f"
done
[[ $(readlink "$P/lib/libnccl.so") == libnccl.so.2 && $(readlink "$P/lib/libnccl.so.2") == libnccl.so.2.* ]] &&
  pass "layout: libnccl.so -> libnccl.so.2 -> $(readlink "$P/lib/libnccl.so.2"), headers, tools, pkg-config, CMake, docs" ||
  flunk "libnccl.so links: $(ls -l "$P/lib")"

cd "$TMP"
built() {  # built NAME COMMAND...: compiles; a failure is the test's failure, with the compiler's words
  local name=$1 out
  shift
  out=$("$@" 2>&1) && return 0
  flunk "$name: build failed"; sed 's/^/    | /' <<<"$out" | tail -n 20
  return 1
}
built flags cc -O1 -I"$P/include" "$SRC/hello.c" -o hello-flags -L"$P/lib" -lnccl -pthread &&
  check "-I\$PREFIX/include -L\$PREFIX/lib -lnccl, LD_LIBRARY_PATH" env LD_LIBRARY_PATH="$P/lib" ./hello-flags
out=$(NCCL_DEBUG=VERSION LD_LIBRARY_PATH="$P/lib" ./hello-flags 2>&1)
grep -qx "NCCL version 2\.[0-9]*\.[0-9]*+baton (CPU backend) from $P/lib/libnccl\.so\.2" <<<"$out" &&
  pass "NCCL_DEBUG=VERSION names baton and the library loaded: $(head -n 1 <<<"$out")" ||
  flunk "NCCL_DEBUG=VERSION banner: $out"
export PKG_CONFIG_PATH=$P/lib/pkgconfig
built nccl.pc cc -O1 "$SRC/hello.c" -o hello-pc $(pkg-config --cflags --libs nccl) -Wl,-rpath,"$P/lib" &&
  check "pkg-config nccl ($(pkg-config --modversion nccl)), rpath" ./hello-pc
built baton.pc cc -O1 "$SRC/hello.c" -o hello-baton-pc $(pkg-config --cflags --libs baton) -Wl,-rpath,"$P/lib" &&
  check "pkg-config baton" ./hello-baton-pc
built static cc -O1 "$SRC/hello.c" -o hello-static $(pkg-config --cflags nccl) -L"$P/lib" -lnccl_static \
  $(pkg-config --static --libs-only-l nccl | sed 's/-lnccl //') &&
  { ldd ./hello-static | grep -q libnccl && flunk "hello-static still loads libnccl.so" ||
    check "static: -lnccl_static + pkg-config --static's private libraries" ./hello-static; }
if command -v cmake >/dev/null; then
  cmake -S "$SRC" -B cm-baton -DCMAKE_PREFIX_PATH="$P" >cm-baton.log 2>&1 && cmake --build cm-baton >>cm-baton.log 2>&1 &&
    check "CMake find_package(baton) -> baton::nccl" ./cm-baton/hello || { flunk "CMake find_package(baton)"; tail cm-baton.log; }
  cmake -S "$SRC" -B cm-find -DUSE_FIND_NCCL=ON -DNCCL_ROOT="$P" >cm-find.log 2>&1 && cmake --build cm-find >>cm-find.log 2>&1 &&
    check "CMake FindNCCL with NCCL_ROOT ($(grep -o 'NCCL [0-9.]* at [^ ]*' cm-find.log))" env LD_LIBRARY_PATH="$P/lib" ./cm-find/hello ||
    { flunk "CMake FindNCCL"; tail cm-find.log; }
else
  echo "SKIP: CMake checks (cmake not installed: tools/install-deps.sh installs it)"
fi
# A lesson's example, built by CMake against the install (lesson 02: naive then ring, both checked).
if command -v cmake >/dev/null; then
  mkdir -p ex && cp -r "$ROOT/examples/common.h" "$ROOT/examples/02-ring-allreduce" ex/
  if cmake -S "$SRC" -B cm-ex -DCMAKE_PREFIX_PATH="$P" -DCHECK_SOURCE="$TMP/ex/02-ring-allreduce/ring_allreduce.c" \
    >cm-ex.log 2>&1 && cmake --build cm-ex >>cm-ex.log 2>&1 && out=$(./cm-ex/hello 2 1 2>&1) &&
    [[ $(grep -c "result OK" <<<"$out") -eq 2 ]]; then
    pass "CMake find_package(baton): lesson 02's example builds and runs ($(tail -n 1 <<<"$out"))"
  else
    flunk "CMake build of examples/02-ring-allreduce"; tail cm-ex.log; echo "${out:-}"
  fi
fi
# The program written against NVIDIA's own nccl.h (and the CUDA headers), linked with pkg-config.
CUDA_NCCL_H=$(ls /usr/local/cuda/include/nccl.h 2>/dev/null | head -n 1)
if [[ -n $CUDA_NCCL_H ]]; then
  built nvidia-header g++ -std=c++17 -O1 -I"$(dirname "$CUDA_NCCL_H")" "$ROOT/tests/abi/nvidia_header_test.cc" \
    -o nvidia-header $(pkg-config --libs nccl) -Wl,-rpath,"$P/lib" -pthread &&
    { out=$(./nvidia-header 2>&1) && pass "NVIDIA's nccl.h program, pkg-config nccl: $(tail -n 1 <<<"$out")" ||
      { flunk "NVIDIA's nccl.h program against the install"; tail <<<"$out"; }; }
else
  echo "SKIP: NVIDIA's nccl.h program against the install (no CUDA toolkit's nccl.h here)"
fi
"$P/bin/baton-perf" allreduce -t 2 -b 8 -e 1M -f 32 -n 2 -w 1 -c 1 >perf.txt 2>&1 && grep -q '^# Out of bounds values : 0 OK$' perf.txt &&
  pass "installed baton-perf runs from the prefix (finds \$PREFIX/lib by its rpath)" || { flunk "installed baton-perf"; tail perf.txt; }

"$P/bin/all_reduce_perf" -b 8 -e 1M -f 32 -t 2 -n 2 -w 1 -c 1 >nt.txt 2>&1 &&
  grep -q '^# Collective test starting: all_reduce_perf$' nt.txt && grep -q '^# Out of bounds values : 0 OK$' nt.txt &&
  pass "installed all_reduce_perf (a link to baton-perf) runs as nccl-tests' program" ||
  { flunk "installed all_reduce_perf"; tail nt.txt; }

# DESTDIR: staged under DESTDIR, but naming PREFIX.
cd "$ROOT"
make --no-print-directory install BUILD="$BUILD" PREFIX=/opt/baton DESTDIR="$TMP/stage" >/dev/null 2>&1 &&
  [[ -f $TMP/stage/opt/baton/lib/libnccl_static.a ]] && grep -q '^prefix=/opt/baton$' "$TMP/stage/opt/baton/lib/pkgconfig/nccl.pc" &&
  pass "DESTDIR: staged under \$DESTDIR/opt/baton, nccl.pc says prefix=/opt/baton" || flunk "DESTDIR install"

# Uninstall removes every file and folder install made, and nothing it did not.
touch "$P/lib/user-file"
make --no-print-directory uninstall PREFIX="$P" >/dev/null 2>&1
left=$(cd "$P" && find . -mindepth 1 | sort | tr '\n' ' ')
[[ $left == "./lib ./lib/user-file " ]] && pass "make uninstall removed everything it installed, kept lib/user-file" ||
  flunk "after make uninstall: $left"
exit $fail
