#!/usr/bin/env bash
# `make deb`, then the package as a fresh machine meets it: dpkg -i, a program compiled with nothing
# but -lnccl (headers and library in /usr), pkg-config and CMake finding it without hints,
# all_reduce_perf from PATH, then dpkg -r leaving no file of the package behind.
#
#   tests/tools/deb_test.sh BUILD
#
# Installing into /usr needs root and a machine where neither baton's package nor another
# libnccl.so.2 is installed in /usr/lib or the multiarch folder (it would be replaced, then
# removed); otherwise the install half is skipped with the reason, and only the package's
# contents are checked. A CUDA toolkit's libnccl.so.2 elsewhere in the loader's path stays: the
# package's must win over it, which the test checks.
set -uo pipefail
BUILD=$(cd "${1:?usage: deb_test.sh BUILD}" && pwd)
SRC=$(cd "$(dirname "$0")/install" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/baton-deb-test.XXXXXX)
installed=0
cleanup() {
  ((installed)) && dpkg --purge baton >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }
for tool in dpkg-deb strip; do
  command -v $tool >/dev/null || { echo "SKIP: make deb (no $tool: tools/install-deps.sh installs it)"; exit 77; }
done

cd "$ROOT"
if ! out=$(make --no-print-directory deb BUILD="$BUILD" DEBDIR="$TMP" 2>&1); then
  flunk "make deb"; tail -n 20 <<<"$out"; exit 1
fi
deb=$(ls "$TMP"/baton_*.deb)
L=/usr/lib/$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
info=$(dpkg-deb --field "$deb" Package Version Architecture Depends)
files=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for f in /usr/include/nccl.h $L/libnccl.so.2 $L/libnccl.so $L/libnccl_static.a /usr/bin/baton-perf \
  /usr/bin/all_reduce_perf /usr/bin/baton-run $L/pkgconfig/nccl.pc $L/cmake/baton/batonConfig.cmake; do
  grep -qx "$f" <<<"$files" || flunk "the package lacks $f"
done
grep -q '^Depends: .*libhwloc' <<<"$info" && pass "make deb: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB); $(grep Depends <<<"$info")" ||
  flunk "package fields: $info"

why=""
[[ $(id -u) -eq 0 ]] || why="not root"
[[ -z $why ]] && dpkg -s baton >/dev/null 2>&1 && why="a baton package is already installed here"
for d in /usr/lib $L; do
  [[ -z $why && -e $d/libnccl.so.2 ]] && why="$d/libnccl.so.2 exists and would be replaced or shadow the package's"
done
if [[ -n $why ]]; then
  echo "SKIP: dpkg -i / dpkg -r of the package ($why)"
  exit $fail
fi

if out=$(dpkg -i "$deb" 2>&1); then
  installed=1
  pass "dpkg -i: $(dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}' baton)"
else
  flunk "dpkg -i"; tail -n 20 <<<"$out"; exit 1
fi
cd "$TMP"
check() {  # check NAME COMMAND...: runs it, expects "allreduce over 2 ranks OK"
  local name=$1 out
  shift
  if out=$("$@" 2>&1) && grep -q "allreduce over 2 ranks OK" <<<"$out"; then pass "$name"; else
    flunk "$name"; tail -n 10 <<<"$out"
  fi
}
cc -O1 "$SRC/hello.c" -o hello -lnccl -pthread 2>cc.log && check "cc hello.c -lnccl (no -I, -L or LD_LIBRARY_PATH)" ./hello ||
  { flunk "cc hello.c -lnccl"; cat cc.log; }
out=$(NCCL_DEBUG=VERSION ./hello 2>&1 | head -n 1)
[[ $out == "NCCL version "*"+baton (CPU backend) from "* && $(readlink -f "${out##* from }") == $(readlink -f "$L/libnccl.so.2") ]] &&
  pass "the loader finds it: $out" ||
  flunk "NCCL_DEBUG=VERSION: $out"
[[ $(pkg-config --modversion nccl 2>&1) == 2.28.* ]] && pass "pkg-config nccl without PKG_CONFIG_PATH: $(pkg-config --modversion nccl)" ||
  flunk "pkg-config nccl: $(pkg-config --modversion nccl 2>&1)"
if command -v cmake >/dev/null; then
  cmake -S "$SRC" -B cm >cm.log 2>&1 && cmake --build cm >>cm.log 2>&1 &&
    check "CMake find_package(baton) without CMAKE_PREFIX_PATH" ./cm/hello || { flunk "CMake"; tail cm.log; }
fi
all_reduce_perf -b 8 -e 64K -f 8 -t 2 -c 1 >perf.txt 2>&1 && grep -q '^# Out of bounds values : 0 OK' perf.txt &&
  pass "all_reduce_perf from PATH ($(command -v all_reduce_perf))" || { flunk "all_reduce_perf from PATH"; tail perf.txt; }

if out=$(dpkg -r baton 2>&1) && dpkg --purge baton >/dev/null 2>&1; then
  installed=0
  left=$(for f in $files; do [[ -f $f || -L $f ]] && echo "$f"; done)
  [[ -z $left ]] && ! ldconfig -p | grep -q "$L/libnccl" && pass "dpkg -r, dpkg --purge: none of the package's files is left" ||
    flunk "after dpkg -r: $left"
else
  flunk "dpkg -r"; tail <<<"$out"
fi
exit $fail
