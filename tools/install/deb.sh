#!/usr/bin/env bash
# `make deb`: a Debian package of `make install` with PREFIX=/usr and the libraries in Debian's
# multiarch folder (/usr/lib/x86_64-linux-gnu, as NVIDIA's libnccl2 package puts them), built with
# dpkg-deb.
#
#   tools/install/deb.sh BUILD OUTDIR
#
# The package is "baton": the files make install writes (headers, libnccl.so.2 and its links,
# libnccl_static.a, baton-perf and nccl-tests' names, baton-run, baton-topo, baton-doctor, baton-ras, pkg-config and CMake
# files, docs), less install.sh's manifest (dpkg keeps its own list; `make uninstall` must not be
# pointed at a package's files). Depends: the packages that own the shared libraries the library
# and the tools load, found with ldd and dpkg -S on this machine, so `dpkg -i` on a machine without
# them says which are missing. It conflicts with NVIDIA's libnccl2 / libnccl-dev, which ship the
# same file names. postinst and postrm run ldconfig.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:?usage: deb.sh BUILD OUTDIR}" && pwd)
OUT=${2:?usage: deb.sh BUILD OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for tool in dpkg-deb dpkg strip; do
  command -v $tool >/dev/null || { echo "deb.sh: $tool is missing (apt-get install dpkg binutils)" >&2; exit 1; }
done

version() { sed -n "s/^#define NCCL_$1 *\([0-9]*\).*/\1/p" "$ROOT/include/nccl.h"; }
# NCCL's version, then baton's own count of commits (or 0 outside git): upgrades sort by both.
commits=$(git -C "$ROOT" rev-list --count HEAD 2>/dev/null || echo 0)
VERSION=$(version MAJOR).$(version MINOR).$(version PATCH)+baton$commits
ARCH=$(dpkg --print-architecture)
STAGE=$(mktemp -d /tmp/baton-deb.XXXXXX)
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/baton

MULTIARCH=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
INSTALL_LIBDIR=lib/$MULTIARCH "$HERE/install.sh" install "$BUILD" /usr "$PKG" >/dev/null
rm -rf "$PKG/usr/share/baton"  # install.sh's manifest
# As Debian packages ship them: no debug sections (the build keeps -g for the build folder).
# The ELF programs only: baton-doctor is a Python script.
elfs=$(for f in "$PKG"/usr/bin/baton-*; do if [[ $(head -c 4 "$f") == $'\x7fELF' ]]; then echo "$f"; fi; done)
strip --strip-unneeded "$PKG"/usr/lib/$MULTIARCH/libnccl.so.2.* "$PKG"/usr/lib/$MULTIARCH/libnccl-tuner-baton.so \
  "$PKG"/usr/lib/$MULTIARCH/libnccl-profiler-baton.so "$PKG"/usr/lib/$MULTIARCH/libnccl-net-baton.so $elfs
strip --strip-debug "$PKG"/usr/lib/$MULTIARCH/libnccl_static.a

# Runtime dependencies: the package of every shared library the installed binaries load.
deps=$(for f in "$PKG"/usr/lib/$MULTIARCH/libnccl.so.2.* $elfs; do ldd "$f"; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | grep -v "$PKG" | sort -u |
  while read -r lib; do
    dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true
  done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')
[[ -n $deps ]] || { echo "deb.sh: found no packages for the libraries baton loads (dpkg -S)" >&2; exit 1; }
deps="$deps, python3"  # baton-doctor, baton-prof

mkdir -p "$PKG/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
cat >"$PKG/DEBIAN/control" <<EOF
Package: baton
Version: $VERSION
Architecture: $ARCH
Maintainer: baton developers <baton@localhost>
Installed-Size: $size
Depends: $deps
Conflicts: libnccl2, libnccl-dev
Section: libs
Priority: optional
Description: collective communications library with NCCL's API, on CPUs
 baton implements the NCCL 2.28 API (libnccl.so.2, nccl.h) on a CPU backend:
 threads and processes on one host, sockets between hosts, ring and tree
 algorithms, the LL, LL128 and Simple protocols, buffer registration and
 fault-tolerant communicators. Also baton-perf with nccl-tests' program names
 (all_reduce_perf, ...), baton-run, baton-topo, baton-doctor, baton-ras, pkg-config and CMake files.
EOF
for script in postinst postrm; do
  printf '#!/bin/sh\nset -e\nldconfig\n' >"$PKG/DEBIAN/$script"
  chmod 755 "$PKG/DEBIAN/$script"
done
deb=$OUT/baton_${VERSION}_$ARCH.deb
dpkg-deb --root-owner-group --build -Zxz "$PKG" "$deb" >/dev/null
echo "$deb"
