#!/usr/bin/env bash
# Runs libFuzzer targets for a set time each and prints one row per target (make fuzz).
#   tests/fuzz/run_fuzz.sh BUILD SECONDS NAME...
# Each target starts from its seed corpus (tests/fuzz/corpus/NAME) and its regressions
# (tests/fuzz/regressions/NAME) and grows a working corpus in BUILD/fuzz-corpus/NAME. A crash, a
# leak or an input slower than 10 s stops the target; the input is saved in BUILD/fuzz-artifacts/NAME/
# (copy it to tests/fuzz/regressions/NAME/ once fixed: make test replays it from then on).
set -uo pipefail
cd "$(dirname "$0")/../.."
build=$1 seconds=$2
shift 2
failed=0
printf '%-16s %8s %12s %10s %8s %8s  %s\n' target seconds runs "exec/s" corpus "cov" result
for name in "$@"; do
  bin=$build/fuzz/${name}_fuzz work=$build/fuzz-corpus/$name art=$build/fuzz-artifacts/$name
  mkdir -p "$work" "$art" "tests/fuzz/regressions/$name"
  log=$build/fuzz-logs/$name.log
  mkdir -p "$(dirname "$log")"
  # The sockets of net_frame stay on loopback; every target's environment parsers see only what
  # the target sets.
  NCCL_SOCKET_IFNAME=lo "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$art/" "$work" "tests/fuzz/corpus/$name" \
    "tests/fuzz/regressions/$name" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  corpus=$(find "$work" -type f | wc -l)
  result=ok
  if ((rc != 0)); then
    result="FAILED (exit $rc; $(ls "$art" | head -1); log: $log)"
    failed=1
  fi
  printf '%-16s %8s %12s %10s %8s %8s  %s\n' "$name" "$seconds" "${runs:-?}" "${rate:-?}" "$corpus" "${cov:-?}" "$result"
done
exit $failed
