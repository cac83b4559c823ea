#!/usr/bin/env bash
# Lesson 09's benchmark: baton's AllReduce on plain buffers (-R 0), registered ncclMemAlloc buffers
# (-R 1) and symmetric windows (-R 2), against OpenMPI and MPICH run fairly, and the machine's
# single-thread memcpy bandwidth, all in the same run.
#
#   tools/scripts/bench-registration.sh [--np 2] [--repeat 3] [--sizes "8 1M 64M 256M"]
#
# Each repeat runs every program once per size, one at a time: baton-perf --memcpy; OpenMPI
# (vader shared memory) as it comes and with MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4G ("-nommap":
# otherwise glibc gives MPI's large temporary buffer back to the kernel after every call and each
# call page-faults it in again, 0.4 GB/s at 64 MiB; the fair figure is the better of the two);
# MPICH (mpirun.mpich) likewise when it is installed (Debian: apt-get install mpich libmpich-dev;
# OpenMPI stays the default mpirun); baton
# -R 0/1/2. 8 B runs 500000 iterations (steady state, not a sweep's cold first size, and long enough
# to outlast the VM's scheduling hiccups, which a few milliseconds do not); larger sizes
# fewer. Prints, per size, the median time and busbw of each and the ratios the issue's goals name;
# raw outputs go to build/bench/registration-raw/. Run it on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
NP=2 REPEAT=3 SIZES="8 1M 64M 256M"
while (($#)); do
  case $1 in
    --np) NP=$2; shift ;;
    --repeat) REPEAT=$2; shift ;;
    --sizes) SIZES=$2; shift ;;
    -h | --help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "bench-registration.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
BIN=build/bin
RAW=build/bench/registration-raw
mkdir -p "$RAW"
export NCCL_SOCKET_IFNAME=lo
[[ -x $BIN/baton-perf ]] || make -j2 tools
MPI_SRC=tools/bench-peers/mpi_allreduce_sweep.cc
if command -v mpicxx >/dev/null && [[ ! -x $BIN/mpi-allreduce-sweep || $MPI_SRC -nt $BIN/mpi-allreduce-sweep ]]; then
  mpicxx -O2 -std=c++20 -o $BIN/mpi-allreduce-sweep $MPI_SRC
fi
if command -v mpicxx.mpich >/dev/null && [[ ! -x $BIN/mpich-allreduce-sweep || $MPI_SRC -nt $BIN/mpich-allreduce-sweep ]]; then
  mpicxx.mpich -O2 -std=c++20 -o $BIN/mpich-allreduce-sweep $MPI_SRC
fi

iters() { case $1 in 8) echo "500000 20000" ;; 1M) echo "500 50" ;; *) echo "10 3" ;; esac; }
# Prints "time_us busbw" of the out-of-place column for one size.
row() { grep -v '^#' | awk 'NF >= 8 && $1 ~ /^[0-9]+$/ {print $6, $8; exit}'; }

run() {  # run IMPL SIZE -> "time busbw"
  local impl=$1 size=$2 n w
  read -r n w < <(iters "$size")
  local sweep=(-b "$size" -e "$size" -n "$n" -w "$w")
  local ompi=(mpirun --allow-run-as-root --oversubscribe -np "$NP" --bind-to none --mca oob_tcp_if_include lo
    --mca btl self,vader --mca pml ob1)
  case $impl in
    openmpi) "${ompi[@]}" $BIN/mpi-allreduce-sweep "${sweep[@]}" -c 0 ;;
    openmpi-nommap) "${ompi[@]}" -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=4294967296 $BIN/mpi-allreduce-sweep "${sweep[@]}" -c 0 ;;
    mpich) mpirun.mpich -np "$NP" -iface lo $BIN/mpich-allreduce-sweep "${sweep[@]}" -c 0 ;;
    mpich-nommap) mpirun.mpich -np "$NP" -iface lo -genv MALLOC_MMAP_MAX_ 0 -genv MALLOC_TRIM_THRESHOLD_ 4294967296 $BIN/mpich-allreduce-sweep "${sweep[@]}" -c 0 ;;
    baton-R*) $BIN/baton-run -n "$NP" --no-prefix $BIN/baton-perf allreduce "${sweep[@]}" -c 0 -R "${impl#baton-R}" ;;
  esac >"$RAW/$impl-$size.txt" 2>&1 || { echo "$impl $size failed: $RAW/$impl-$size.txt" >&2; return 1; }
  row <"$RAW/$impl-$size.txt"
}

IMPLS=(openmpi openmpi-nommap)
[[ -x $BIN/mpich-allreduce-sweep ]] && command -v mpirun.mpich >/dev/null && IMPLS+=(mpich mpich-nommap)
IMPLS+=(baton-R0 baton-R1 baton-R2)
declare -A T B
MEMCPY=()
for ((rep = 1; rep <= REPEAT; rep++)); do
  MEMCPY+=("$($BIN/baton-perf --memcpy allreduce | grep -o '[0-9.]* GB/s' | head -1 | cut -d' ' -f1)")
  for size in $SIZES; do
    for impl in "${IMPLS[@]}"; do
      read -r t b < <(run "$impl" "$size")
      T[$impl,$size]+="$t " B[$impl,$size]+="$b "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mc=$(printf '%s ' "${MEMCPY[@]}" | median)
echo "np $NP, $REPEAT repeats, float sum, medians; single-thread memcpy ${mc} GB/s (per repeat: ${MEMCPY[*]})"
printf '%-8s %-16s %12s %10s   %s\n' size impl time_us busbw per-repeat-time_us
for size in $SIZES; do
  for impl in "${IMPLS[@]}"; do
    printf '%-8s %-16s %12s %10s   %s\n' "$size" "$impl" "$(echo "${T[$impl,$size]}" | median)" \
      "$(echo "${B[$impl,$size]}" | median)" "${T[$impl,$size]}"
  done
done
echo
echo "ratios (medians of the same run):"
for size in $SIZES; do
  med() { echo "${T[$1,$size]}" | median; }
  mpi=$(printf '%s\n' "$(med openmpi)" "$(med openmpi-nommap)" | sort -g | head -1)
  best=$mpi
  [[ -n ${T[mpich,$size]:-} ]] && best=$(printf '%s\n' "$mpi" "$(med mpich)" "$(med mpich-nommap)" | sort -g | head -1)
  for impl in baton-R0 baton-R1 baton-R2; do
    t=$(echo "${T[$impl,$size]}" | median) b=$(echo "${B[$impl,$size]}" | median)
    awk -v s="$size" -v i="$impl" -v t="$t" -v m="$mpi" -v x="$best" -v b="$b" -v mc="$mc" -v r0="$(echo "${T[baton-R0,$size]}" | median)" \
      'BEGIN {printf "%-6s %-9s time/OpenMPI(best of 2) %.2f  speedup vs best MPI %.2fx  busbw/memcpy %.2f  speedup vs -R 0 %.2fx\n", s, i, t/m, x/t, b/mc, r0/t}'
  done
done
