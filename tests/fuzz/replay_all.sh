#!/usr/bin/env bash
# Replays every fuzz target's seed corpus and regressions with its plain g++ build (make test's
# fuzz-replay suite).   tests/fuzz/replay_all.sh TESTDIR NAME...
set -euo pipefail
cd "$(dirname "$0")/../.."
testdir=$1
shift
for name in "$@"; do
  dirs=("tests/fuzz/corpus/$name")
  [[ -d tests/fuzz/regressions/$name ]] && dirs+=("tests/fuzz/regressions/$name")
  "$testdir/fuzz/${name}_replay" "${dirs[@]}"
done
