#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages baton needs to build, test and plot.
#
#   tools/install-deps.sh           install whatever is missing (needs root)
#   tools/install-deps.sh --check   exit 0 if everything is installed, else list
#                                   the missing packages and exit 1
#   tools/install-deps.sh --print   print the package list, one per line
#
# Idempotent: asks dpkg-query first and only touches apt when something is
# missing. Without root or apt-get it prints the command to run and exits 1.
set -euo pipefail

PACKAGES=(
  build-essential g++ make pkg-config      # toolchain
  cmake                                    # the install test builds against find_package(baton)
  libhwloc-dev                             # topology discovery
  libibverbs-dev librdmacm-dev rdma-core   # RDMA transport
  libcli11-dev                             # command-line parsing in tools
  libgtest-dev googletest                  # unit tests
  openmpi-bin libopenmpi-dev               # MPI launcher and peer to compare with
  libgloo-dev                              # Gloo: the TCP peer of tools/scripts/bench-net.sh
  libopenblas0-pthread                     # the GEMM of the fused operations (loaded at run time)
  iproute2 procps                          # ip / ss, pgrep / ps used by tests and tools
  clang-format                             # make format, and the format check of make test
  clang libclang-rt-dev                    # make fuzz: libFuzzer with ASan and UBSan
  python3 python3-matplotlib graphviz      # plotting; graphviz renders baton-topo --dot pictures
)

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; }

# Prints the packages that are not fully installed ("ii" in dpkg's database).
missing_packages() {
  local p
  for p in "${PACKAGES[@]}"; do
    if ! command -v dpkg-query >/dev/null 2>&1 ||
       [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) != ii* ]]; then
      echo "$p"
    fi
  done
}

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --print) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
  -h|--help) usage; exit 0 ;;
  *) echo "install-deps.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
esac

mapfile -t missing < <(missing_packages)
if (( ${#missing[@]} == 0 )); then
  echo "install-deps.sh: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

if [[ $mode == check ]]; then
  echo "install-deps.sh: missing packages: ${missing[*]}"
  exit 1
fi

install_cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps.sh: missing packages: ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo "
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps.sh: apt-get not found; on a Debian/Ubuntu system run:" >&2
  else
    echo "install-deps.sh: not root; run:" >&2
  fi
  echo "  ${sudo}sh -c '$install_cmd'" >&2
  exit 1
fi

echo "install-deps.sh: installing: ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"

# Verify, so a silently skipped package is not mistaken for success.
mapfile -t still < <(missing_packages)
if (( ${#still[@]} > 0 )); then
  echo "install-deps.sh: still missing after install: ${still[*]}" >&2
  exit 1
fi
echo "install-deps.sh: done"
