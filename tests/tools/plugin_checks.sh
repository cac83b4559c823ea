# The plugin hosts' test scripts share these (tests/tools/{tuner,env}_plugin_test.sh): sourced after
# `set -euo pipefail`, with BUILD set. Each check runs a command into $TMP/out (its exit in $rc) and
# reads what the library did there; `finish` prints "N passed, M failed" and sets the exit status.
BIN=$BUILD/bin
PLUG=$(cd "$BUILD/tests/plugins" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
npass=0 nfail=0 rc=0
pass() { echo "PASS: $1"; npass=$((npass + 1)); }
fail() {
  echo "FAIL: $1"; nfail=$((nfail + 1))
  echo "  rc=$rc; output:"; sed 's/^/    /' "$TMP/out" | tail -60
}
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
has() { grep -qF -- "$1" "$TMP/out"; }
count() { grep -cF -- "$1" "$TMP/out" || true; }
exact() { grep -q "Out of bounds values : 0 OK" "$TMP/out" && [[ $rc == 0 ]]; }
finish() { echo "$npass passed, $nfail failed"; [[ $nfail == 0 ]]; }
