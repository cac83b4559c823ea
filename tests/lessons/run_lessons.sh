#!/usr/bin/env bash
# Runs each lesson's program (docs/lessons/NN-*.md) and checks the lines the lesson tells you to expect.
set -euo pipefail
BUILD=${1:-build}
EX=$BUILD/bin/examples
fail=0
expect() {  # expect PATTERN OUTPUT
  if ! grep -qE -- "$1" <<<"$2"; then echo "missing expected line: $1"; fail=1; fi
}
out=$("$EX/01-naive-allreduce/naive_allreduce" 4 8); echo "$out"
expect '^naive allreduce: 4 ranks, 8 MiB: .* result OK$' "$out"
expect '^bytes through rank 0: 48 MiB, through each other rank: 16 MiB$' "$out"

out=$("$EX/02-ring-allreduce/ring_allreduce" 4 8); echo "$out"
expect '^naive allreduce: 4 ranks, 8 MiB: .*result OK$' "$out"
expect '^ring  allreduce: 4 ranks, 8 MiB: .*result OK$' "$out"
expect '^per-rank bytes sent: ring 12.00 MiB each; naive 24.00 MiB at rank 0$' "$out"

out=$("$EX/03-pipelining/pipelining" 4 16); echo "$out"
expect 'stop-and-wait .* result OK$' "$out"
expect 'pipelined \(8 slots in flight\), +512 KiB steps: .* result OK$' "$out"
exit $fail
