#!/usr/bin/env bash
# nccl-tests' program names (links to baton-perf): typical nccl-tests command lines, their text read
# the way analysis scripts read it (rows = lines not starting with '#', whitespace-split; the "Avg
# bus bandwidth" line), their -J JSON read with nccl-tests 2.19's keys, every flag either honoured
# (it shows in the output) or refused with exit status 2 and the reason.
#   tests/tools/nccl_tests_compat_test.sh BINDIR
set -uo pipefail
BIN=$(cd "${1:?usage: nccl_tests_compat_test.sh BINDIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export NCCL_SOCKET_IFNAME=lo
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
parse() { python3 "$HERE/nccl_tests_parse.py" "$@"; }

# Every name, two ranks as threads, every row checked (-c 1): the parser also checks #wrong.
for name in all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf \
  sendrecv_perf gather_perf scatter_perf hypercube_perf; do
  [[ -L $BIN/$name ]] || { bad "$BIN/$name is not a link to baton-perf"; continue; }
  if "$BIN/$name" -b 8 -e 1M -f 4 -g 1 -t 2 -n 2 -w 1 -c 1 >"$TMP/$name.txt" 2>&1 &&
    out=$(parse text "$TMP/$name.txt" --rows 9 --program "$name"); then
    ok "$name -b 8 -e 1M -f 4 -g 1 -t 2: $out"
  else
    bad "$name"; tail -5 "$TMP/$name.txt"
  fi
done

# The commonest line, as processes under baton-run: plain lines (no "[r] " prefix), and -J's JSON
# agrees with the text row by row.
if "$BIN/baton-run" -n 2 "$BIN/all_reduce_perf" -b 8 -e 8M -f 2 -g 1 -J "$TMP/ar.json" >"$TMP/ar.txt" 2>&1 &&
  out=$(parse text "$TMP/ar.txt" --rows 21 --program all_reduce_perf) &&
  js=$(parse json "$TMP/ar.json" --text "$TMP/ar.txt" --nranks 2); then
  ok "baton-run -n 2 all_reduce_perf -b 8 -e 8M -f 2 -g 1 -J: $out; json: $js"
else
  bad "all_reduce_perf under baton-run with -J"; tail -5 "$TMP/ar.txt"
fi
grep -q '^\[' "$TMP/ar.txt" && bad "baton-run prefixed the lines of an nccl-tests name"
# An existing file is never overwritten: nccl-tests writes FILE.0 instead.
"$BIN/all_reduce_perf" -b 1K -e 1K -J "$TMP/ar.json" >"$TMP/again.txt" 2>&1
if grep -q "Writing JSON output to $TMP/ar.json.0" "$TMP/again.txt" && parse json "$TMP/ar.json.0" >/dev/null; then
  ok "-J onto an existing file writes FILE.0"
else
  bad "-J onto an existing file"; cat "$TMP/again.txt"
fi

# -J records the environment as nccl-tests does, but never a secret's value: the names stay.
MY_API_TOKEN=hunter2-token DB_PASSWORD=hunter2-pw aws_secret_access_key=hunter2-aws BATON_PLAIN=visible \
  "$BIN/all_reduce_perf" -b 8 -e 8 -J "$TMP/env.json" >/dev/null 2>&1
if python3 - "$TMP/env.json" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))["env"]
want = {"MY_API_TOKEN=<redacted>", "DB_PASSWORD=<redacted>", "aws_secret_access_key=<redacted>", "BATON_PLAIN=visible"}
missing = want - set(env)
leaked = [e for e in env if "hunter2" in e]
sys.exit(1 if missing or leaked else 0)
PY
then
  ok "-J: secret-looking variables keep their names, their values are <redacted>"
else
  bad "-J leaks or drops environment entries"; grep -o '"[A-Za-z_]*\(TOKEN\|PASSWORD\|secret\|PLAIN\)[^"]*"' "$TMP/env.json"
fi

# Flags that change what is measured or printed: each shows in the output.
run() {  # run LABEL CHECK ARGS...: runs all_reduce_perf ARGS, then CHECK (a parse invocation)
  local label=$1 check=$2
  shift 2
  if "$BIN/all_reduce_perf" "$@" >"$TMP/f.txt" 2>&1 && out=$(eval "$check"); then
    ok "$label: $out"
  else
    bad "$label"; tail -5 "$TMP/f.txt"
  fi
}
run "-m 4 (grouped operations per iteration)" 'grep -q "agg iters: 4" $TMP/f.txt && parse text $TMP/f.txt --rows 2' \
  -b 1K -e 4K -f 4 -t 2 -m 4 -c 1
run "-N 3 (cycles: every size 3 times)" 'parse text $TMP/f.txt --rows 6' -b 1K -e 4K -f 4 -t 2 -N 3
run "-u 3 (unaligned buffers, checked)" 'grep -q "unalign: 3" $TMP/f.txt && parse text $TMP/f.txt --rows 36' \
  -b 1K -e 1M -f 32 -t 2 -u 3 -d all -c 1
run "-I 1 -K 2 (per-iteration columns)" 'parse text $TMP/f.txt --rows 2 --columns 21' -b 1K -e 4K -f 4 -t 2 -I 1 -K 2 \
  -n 8 -J $TMP/iter.json
parse json "$TMP/iter.json" --per-iter 8 >/dev/null || bad "-I 1 in the JSON file"
run "-S 1 (timestamp column)" 'parse text $TMP/f.txt --rows 2 --columns 15' -b 1K -e 4K -f 4 -t 2 -S 1
run "-C 1 (cputime label and key)" 'grep -q cputime $TMP/f.txt && parse json $TMP/c.json --time-key cpu_time' \
  -b 1K -e 1K -t 2 -C 1 -J "$TMP/c.json"
run "-p 1 -x 1 -T 30 -y 0 -z 1 -a 3" 'grep -q "Parallel Init Enabled" $TMP/f.txt && parse text $TMP/f.txt --rows 2' \
  -b 1K -e 4K -f 4 -t 2 -p 1 -x 1 -T 30 -y 0 -z 1 -a 3
run "-R 2 -d all -o all" 'parse text $TMP/f.txt --rows 72' -b 64 -e 64 -t 2 -R 2 -d all -o all -c 1
run "-i 1K (step bytes)" 'parse text $TMP/f.txt --rows 3' -b 1K -e 3K -i 1K -t 2
# nccl-tests' NCCL_TESTS_MIN_BW: below 0.9x of it the run fails.
if NCCL_TESTS_MIN_BW=1000000 "$BIN/all_reduce_perf" -b 1K -e 1K -t 2 >"$TMP/min.txt" 2>&1; then
  bad "NCCL_TESTS_MIN_BW=1000000 passed"
elif grep -q "Avg bus bandwidth.*FAILED" "$TMP/min.txt"; then
  ok "NCCL_TESTS_MIN_BW=1000000: FAILED and a non-zero exit"
else
  bad "NCCL_TESTS_MIN_BW"; cat "$TMP/min.txt"
fi
if "$BIN/hypercube_perf" -b 1K -e 1K -t 3 >"$TMP/h.txt" 2>&1 && grep -q "nRanks 3 is not a power of 2, skipping" "$TMP/h.txt"; then
  ok "hypercube_perf on 3 ranks skips, as nccl-tests does"
else
  bad "hypercube_perf on 3 ranks"; cat "$TMP/h.txt"
fi

# Flags that cannot mean anything here: exit status 2 and a reason.
refuse() {  # refuse WORD ARGS...: the message must contain WORD
  local word=$1
  shift
  "$BIN/all_reduce_perf" "$@" >"$TMP/r.txt" 2>&1
  local rc=$?
  if [[ $rc -eq 2 ]] && grep -q "$word" "$TMP/r.txt"; then
    ok "refused $*: $(head -1 "$TMP/r.txt" | cut -c1-110)"
  else
    bad "$* exited $rc, want 2 with '$word'"; cat "$TMP/r.txt"
  fi
}
refuse "no GPUs" -g 2
refuse "CUDA streams" -G 1
refuse "device-side" -D 1
refuse "GPU memory" -M 1
refuse "1..128" -V 0
refuse "needs -I 1" -K 1
refuse "takes no collective argument" allreduce -b 8
exit $fail
