#!/usr/bin/env bash
# OpenMPI's mpirun launching baton ranks (include/baton/launch.h): baton-perf finds its rank and the
# job size in OMPI_COMM_WORLD_*, meets the others at NCCL_COMM_ID, and every result is checked;
# without NCCL_COMM_ID it refuses with what to set. Skipped, with the reason, without mpirun.
set -uo pipefail
BIN=${1:?usage: mpirun_launch_test.sh BINDIR}
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (tools/install-deps.sh installs openmpi-bin)"
  exit 77
fi
root=()
[[ $(id -u) == 0 ]] && root=(--allow-run-as-root)
# OpenMPI's runtime talks over TCP too: keep it on loopback (docs/testing.md).
mpi=(mpirun "${root[@]}" --oversubscribe -np 2 --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)
fail=0
port=$((20000 + RANDOM % 12000))
out=$(timeout 120 "${mpi[@]}" -x NCCL_COMM_ID=127.0.0.1:$port -x BATON_TUNING_FILE=none \
      "$BIN/baton-perf" allreduce -b 8 -e 64K -f 8 -c 1 -n 2 -w 1 2>&1)
echo "$out"
if grep -q '^# Out of bounds values : 0 OK$' <<<"$out" && grep -q 'nranks 2\|2 ranks\|Rank  1' <<<"$out"; then
  echo "PASS: mpirun -np 2 launched two baton ranks, results checked"
else
  echo "FAIL: mpirun -np 2 with NCCL_COMM_ID did not run a checked 2-rank sweep"; fail=1
fi
out=$(timeout 60 "${mpi[@]}" "$BIN/baton-perf" allreduce -b 8 -e 8 2>&1)
if grep -q 'openmpi started 2 processes but NCCL_COMM_ID is not set' <<<"$out"; then
  echo "PASS: without NCCL_COMM_ID baton-perf says what to set"
else
  echo "$out"; echo "FAIL: without NCCL_COMM_ID: expected a message naming NCCL_COMM_ID"; fail=1
fi
exit $fail
