#!/usr/bin/env bash
# Source hygiene, checked by `make test`:
#   - every C/C++ source is formatted as .clang-format says (`make format` fixes it);
#   - nothing points outside the repository: docs and comments state a fact and cite its public
#     source (NCCL's file, a paper), never notes a reader of this repository does not have.
set -uo pipefail
cd "$(dirname "$0")/../.."
fail=0
mapfile -t sources < <(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null || find src transports algorithms include tests tools examples -name '*.[ch]' -o -name '*.cc' -o -name '*.cu')
if ! command -v clang-format >/dev/null 2>&1; then
  echo "FAIL: clang-format not found (tools/install-deps.sh installs it)"; fail=1
else
  # One clang-format for every file; its warnings name the files that differ.
  if ! out=$(clang-format --style=file --dry-run --Werror "${sources[@]}" 2>&1); then
    echo "FAIL: not formatted (run make format):"
    grep -o '^[^:]*:[0-9]*:[0-9]*: error' <<<"$out" | cut -d: -f1 | sort -u | sed 's/^/  /'; fail=1
  else
    echo "PASS: ${#sources[@]} sources formatted as .clang-format says ($(clang-format --version | grep -o 'version [0-9.]*'))"
  fi
fi
# The pattern is assembled from parts so this file names no such path itself and is checked too.
notes='design|anchors|nccl-internals|fused-and-style'
outside=$(git grep -nE "(shared)/(reference)|(reference)/($notes)|\b($notes)[.]md" -- . 2>/dev/null)
if [[ -n $outside ]]; then
  echo "FAIL: these point at notes outside the repository; state the fact and its public source instead:"
  echo "$outside"; fail=1
else
  echo "PASS: nothing points outside the repository"
fi
exit $fail
