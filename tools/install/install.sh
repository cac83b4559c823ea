#!/usr/bin/env bash
# `make install` and `make uninstall`: baton laid out under a prefix as an NCCL install is, so a
# program builds with -I$PREFIX/include -L$PREFIX/lib -lnccl, with pkg-config (nccl.pc, baton.pc)
# or with CMake (find_package(baton), or a FindNCCL module given NCCL_ROOT).
#
#   tools/install/install.sh install BUILD PREFIX [DESTDIR]
#   tools/install/install.sh uninstall PREFIX [DESTDIR]
#
# INSTALL_LIBDIR (default lib) is the library folder under PREFIX: `make deb` uses Debian's
# multiarch folder, lib/x86_64-linux-gnu, which the loader searches before folders added later
# (a CUDA toolkit's, whose libnccl.so.2 would otherwise win).
#
# Layout (lib: INSTALL_LIBDIR): include/nccl.h, include/baton/*.h; lib/libnccl.so.2.<minor>.<patch> with the links
# libnccl.so.2 and libnccl.so, lib/libnccl_static.a; lib/pkgconfig/{nccl,baton}.pc;
# lib/cmake/baton/batonConfig{,Version}.cmake; bin/baton-perf, baton-run, baton-topo, baton-doctor, baton-ras, baton-prof and nccl-tests'
# names (all_reduce_perf, ...: links to baton-perf);
# share/doc/baton/ (README and docs/). DESTDIR stages the tree (packaging): the files land under
# DESTDIR/PREFIX but name PREFIX. Every installed path is listed in
# share/baton/install-manifest.txt, which uninstall reads, so it removes what install wrote and
# nothing else.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
usage() { sed -n '6,7s/^# \{0,1\}//p' "$0" >&2; exit 2; }

mode=${1:-}
case $mode in
  install) BUILD=${2:-}; PREFIX=${3:-}; DESTDIR=${4:-} ;;
  uninstall) PREFIX=${2:-}; DESTDIR=${3:-} ;;
  *) usage ;;
esac
[[ -n $PREFIX && $PREFIX == /* ]] || { echo "install.sh: PREFIX must be an absolute path, not '$PREFIX'" >&2; exit 2; }
DEST=$DESTDIR$PREFIX
LIB=${INSTALL_LIBDIR:-lib}
[[ $LIB != /* && $LIB != *..* ]] || { echo "install.sh: INSTALL_LIBDIR must be relative to PREFIX, not '$LIB'" >&2; exit 2; }
UP=$(sed -e 's|[^/]*|..|g' <<<"$LIB")  # from the library folder back to PREFIX: lib -> .., lib/x -> ../..
MANIFEST=share/baton/install-manifest.txt

if [[ $mode == uninstall ]]; then
  [[ -f $DEST/$MANIFEST ]] || { echo "install.sh: nothing to uninstall: no $DEST/$MANIFEST" >&2; exit 1; }
  mapfile -t paths <"$DEST/$MANIFEST"
  for p in "${paths[@]}"; do rm -f "$DEST/$p"; done
  rm -f "$DEST/$MANIFEST"
  # The folders install made, deepest first, where nothing else lives in them now.
  for p in "${paths[@]}" "$MANIFEST"; do
    d=$(dirname "$p")
    while [[ $d != . ]]; do echo "$d"; d=$(dirname "$d"); done
  done | sort -u -r | while read -r d; do rmdir "$DEST/$d" 2>/dev/null || true; done
  echo "baton: uninstalled ${#paths[@]} files from $DEST"
  exit 0
fi

[[ -n $BUILD && -f $BUILD/lib/libnccl.so.2 ]] || { echo "install.sh: $BUILD/lib/libnccl.so.2 is not built (make)" >&2; exit 1; }
version() { sed -n "s/^#define NCCL_$1 *\([0-9]*\).*/\1/p" "$ROOT/include/nccl.h"; }
MAJOR=$(version MAJOR) MINOR=$(version MINOR) PATCH=$(version PATCH)
VERSION=$MAJOR.$MINOR.$PATCH
installed=()
put() {  # put MODE SRC REL: copy SRC to DEST/REL
  install -D -m "$1" "$2" "$DEST/$3"
  installed+=("$3")
}
link() {  # link TARGET REL
  mkdir -p "$(dirname "$DEST/$2")"
  ln -sfn "$1" "$DEST/$2"
  installed+=("$2")
}
fill() {  # fill TEMPLATE REL: the template with @PREFIX@, @VERSION@, @MAJOR@, @LIBDIR@, @LIBDIR_UP@ replaced
  mkdir -p "$(dirname "$DEST/$2")"
  sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$VERSION|g" -e "s|@MAJOR@|$MAJOR|g" -e "s|@LIBDIR@|$LIB|g" \
    -e "s|@LIBDIR_UP@|$UP|g" "$1" >"$DEST/$2"
  chmod 644 "$DEST/$2"
  installed+=("$2")
}

put 644 "$ROOT/include/nccl.h" include/nccl.h
for h in "$ROOT"/include/baton/*.h; do put 644 "$h" "include/baton/$(basename "$h")"; done
put 755 "$BUILD/lib/libnccl.so.2" "$LIB/libnccl.so.$VERSION"
link "libnccl.so.$VERSION" $LIB/libnccl.so.$MAJOR
link "libnccl.so.$MAJOR" $LIB/libnccl.so
put 644 "$BUILD/lib/libnccl_static.a" $LIB/libnccl_static.a
# baton's calibrated tuner as an NCCL tuner plugin (NCCL_TUNER_PLUGIN=baton finds it on the library path).
put 755 "$BUILD/lib/libnccl-tuner-baton.so" "$LIB/libnccl-tuner-baton.so"
put 755 "$BUILD/lib/libnccl-profiler-baton.so" "$LIB/libnccl-profiler-baton.so"
# baton's socket back-end as an NCCL network plugin (NCCL_NET_PLUGIN=baton).
put 755 "$BUILD/lib/libnccl-net-baton.so" "$LIB/libnccl-net-baton.so"
# The CUDA backend's plugin (built where nvcc is): libnccl.so.2 opens it from its own folder.
[[ -f $BUILD/lib/libbaton-cuda.so ]] && put 755 "$BUILD/lib/libbaton-cuda.so" "$LIB/libbaton-cuda.so"
for t in baton-perf baton-run baton-topo baton-doctor baton-ras baton-prof; do put 755 "$BUILD/bin/$t" "bin/$t"; done
for l in "$BUILD"/bin/*_perf; do  # nccl-tests' names (the Makefile's list): links to baton-perf
  [[ -L $l ]] && link baton-perf "bin/$(basename "$l")"
done
fill "$HERE/nccl.pc.in" $LIB/pkgconfig/nccl.pc
fill "$HERE/baton.pc.in" $LIB/pkgconfig/baton.pc
fill "$HERE/batonConfig.cmake.in" $LIB/cmake/baton/batonConfig.cmake
fill "$HERE/batonConfigVersion.cmake.in" $LIB/cmake/baton/batonConfigVersion.cmake
put 644 "$ROOT/README.md" share/doc/baton/README.md
while read -r f; do put 644 "$ROOT/$f" "share/doc/baton/$f"; done < <(cd "$ROOT" && find docs -type f | sort)

mkdir -p "$DEST/$(dirname "$MANIFEST")"
printf '%s\n' "${installed[@]}" >"$DEST/$MANIFEST"
echo "baton: installed ${#installed[@]} files under $DEST (libnccl.so.$VERSION; pkg-config: $PREFIX/$LIB/pkgconfig; CMake: $PREFIX/$LIB/cmake/baton)"
