#!/usr/bin/env bash
# Peer comparison: baton's allreduce against OpenMPI's MPI_Allreduce on the same machine, same sizes.
#
#   tools/scripts/bench-peers.sh [--np "2 4"] [--max 256M] [--repeat 3] [--iters 20] [--warmup 5] [--plot]
#   tools/scripts/bench-peers.sh --plot-only     redraw the figure from the last CSV, running nothing
#   tools/scripts/bench-peers.sh --latency [--np 2] [--repeat 3] [--iters 200] [--warmup 50]
#                                             the latency table instead of the sweep (below)
#
# For each NP, --repeat times, one program at a time: the single-thread memcpy bandwidth
# (baton-perf --memcpy), OpenMPI (build/bin/mpi-allreduce-sweep under mpirun, shared-memory BTL
# only), then baton-perf under baton-run with the default protocol and with NCCL_PROTO=LL, LL128 and
# Simple. Float sum, 8 B .. --max, factor 2, out-of-place columns, time = max over ranks (-a 3) for
# both. Per size it keeps the median time and median busbw over the repeats, prints one table per
# NP, and writes build/bench/peers.csv (np,impl,size,time_us,busbw_GBs) plus peers-memcpy.csv;
# --plot then draws docs/figures/allreduce-busbw-vs-size.png with tools/scripts/plot-perf.py. Raw outputs
# stay in build/bench/peers-raw/. Any nonzero #wrong stops the run. Run it on an otherwise idle
# machine: on 2 cores a second busy program halves everyone's numbers.
# Environment: OUT (default build/bench), FIGURE (default docs/figures/allreduce-busbw-vs-size.png).
#
# --latency: 8 B, 64 B, 1 KiB, 8 KiB and 64 KiB AllReduce, Broadcast and a send/recv ping-pong
# (tools/bench-peers/latency_table.h: one timing loop for every library), per repeat OpenMPI
# (build/bin/mpi-latency), baton on plain buffers and baton on symmetric windows (build/bin/baton-latency
# --buffers window), bound alike. Prints per (op, size) the median over repeats of each one's median
# time, the ratios to OpenMPI, and each repeat's cache placement as baton's init measured it ("near" or
# "far", docs/perf.md); writes build/bench/latency.csv.
set -euo pipefail
cd "$(dirname "$0")/../.."

NPS="2 4" MAX=256M REPEAT=3 ITERS=20 WARMUP=5 PLOT=0 RUN=1 LATENCY=0 NPS_SET=0 ITERS_SET=0 WARMUP_SET=0
OUT=${OUT:-build/bench}
FIGURE=${FIGURE:-docs/figures/allreduce-busbw-vs-size.png}
BIN=build/bin
MPI_SRC=tools/bench-peers/mpi_allreduce_sweep.cc
MPI_BIN=$BIN/mpi-allreduce-sweep
CSV=$OUT/peers.csv
MEMCSV=$OUT/peers-memcpy.csv
RAW=$OUT/peers-raw
IMPLS=(openmpi baton baton-LL baton-LL128 baton-Simple)
LAT_MAX=32768  # sizes up to here are latency-bound on this machine: show the time ratio for them

die() { echo "bench-peers.sh: $*" >&2; exit 1; }
usage() { sed -n '2,26s/^# \{0,1\}//p' "$0"; }

while (( $# )); do
  case $1 in
    --np) NPS=${2:?--np needs a list} NPS_SET=1; shift ;;
    --max) MAX=${2:?--max needs a size}; shift ;;
    --repeat) REPEAT=${2:?--repeat needs a number}; shift ;;
    --iters) ITERS=${2:?--iters needs a number} ITERS_SET=1; shift ;;
    --warmup) WARMUP=${2:?--warmup needs a number} WARMUP_SET=1; shift ;;
    --latency) LATENCY=1 ;;
    --plot) PLOT=1 ;;
    --plot-only) PLOT=1 RUN=0 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive number (got '$REPEAT')"

plot() {
  [[ -s $CSV ]] || die "no $CSV to plot; run the sweep first"
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null ||
    die "Debian's matplotlib is missing: apt-get install -y python3-matplotlib (or tools/install-deps.sh)"
  /usr/bin/python3 tools/scripts/plot-perf.py --csv "$CSV" --memcpy "$MEMCSV" --out "$FIGURE"
}
if (( ! RUN )); then plot; exit 0; fi

# --- build: the library and tools are assumed built; the MPI program is ours to (re)build ---
for tool in mpirun mpicxx ompi_info; do
  command -v "$tool" >/dev/null ||
    die "$tool not found: apt-get install -y openmpi-bin libopenmpi-dev (or tools/install-deps.sh)"
done
[[ -x $BIN/baton-perf && -x $BIN/baton-run ]] || make -j2 tools
if [[ ! -x $MPI_BIN || $MPI_SRC -nt $MPI_BIN ]]; then
  echo "== mpicxx $MPI_SRC -> $MPI_BIN"
  mkdir -p "$BIN"
  mpicxx -O2 -std=c++20 -Wall -Wextra -o "$MPI_BIN" "$MPI_SRC"
fi

# OpenMPI 4 calls its shared-memory BTL "vader", OpenMPI 5 "sm". Only it and "self" are allowed, so
# OpenMPI cannot fall back to TCP over loopback; pml ob1 is forced because the BTL list only binds
# ob1 (pml ucx would bring its own transports).
if ompi_info | grep -q 'MCA btl: vader '; then SHM_BTL=vader
elif ompi_info | grep -q 'MCA btl: sm '; then SHM_BTL=sm
else die "this OpenMPI has neither the vader nor the sm BTL (ompi_info | grep btl)"
fi

SWEEP=(-b 8 -e "$MAX" -f 2 -n "$ITERS" -w "$WARMUP" -a 3)
# Both launchers bind alike: a core per rank for 1 or 2 ranks (mpirun's default, and baton-run's),
# none above. Unbound, two ranks can share one CPU for the first seconds of a run (docs/perf.md).
bind_for() { if (($1 <= 2)); then echo core; else echo none; fi; }
command_for() {  # impl np -> the command line, in the array CMD
  local impl=$1 np=$2 bind
  bind=$(bind_for "$np")
  case $impl in
    # glibc's malloc would hand OpenMPI's temporary buffers back to the kernel and fault them in
    # again on every call: keep them (as bench-registration.sh's "nommap" rows do).
    openmpi) CMD=(mpirun --allow-run-as-root --oversubscribe -np "$np" --bind-to "$bind" --mca oob_tcp_if_include lo
                  -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=4294967296
                  --mca btl "self,$SHM_BTL" --mca pml ob1 "$MPI_BIN" "${SWEEP[@]}") ;;
    baton) CMD=(env -u NCCL_PROTO "$BIN/baton-run" -n "$np" --bind-to "$bind" --no-prefix "$BIN/baton-perf" allreduce
                "${SWEEP[@]}") ;;
    baton-*) CMD=(env "NCCL_PROTO=${impl#baton-}" "$BIN/baton-run" -n "$np" --bind-to "$bind" --no-prefix
                  "$BIN/baton-perf" allreduce "${SWEEP[@]}") ;;
  esac
}

# Runs one sweep into $RAW/np<NP>-<impl>-r<rep>.txt and stops everything on a failure or a #wrong.
run_one() {
  local impl=$1 np=$2 rep=$3 f="$RAW/np$2-$1-r$3.txt" rc=0
  command_for "$impl" "$np"
  echo "== np $np, repeat $rep/$REPEAT, $impl: ${CMD[*]}"
  "${CMD[@]}" >"$f" 2>"$f.err" || rc=$?
  local wrong
  wrong=$(awk '!/^#/ && NF >= 13 && ($9 != 0 || $13 != 0)' "$f")
  [[ -z $wrong ]] || die "$impl with $np ranks computed wrong results (#wrong is not 0) in $f:"$'\n'"$wrong"
  if (( rc != 0 )); then
    tail -n 5 "$f" "$f.err" >&2
    die "$impl with $np ranks exited with status $rc (output in $f, $f.err)"
  fi
  awk '!/^#/ && NF >= 13 { n++ } END { exit n ? 0 : 1 }' "$f" || die "$impl with $np ranks printed no rows ($f)"
}

# The CSV lines of one (np, impl): per size, the median over repeats of the out-of-place time and of
# the busbw. busbw is recomputed from the time (bytes/time x 2(n-1)/n, as both programs print it) to
# keep more digits than the printed 0.00 at small sizes.
medians() {
  local np=$1 impl=$2
  awk -v np="$np" -v impl="$impl" '
    function median(a, key, k,   i, j, v, s) {
      for (i = 1; i <= k; i++) s[i] = a[key, i] + 0  # numbers, so the sort is numeric
      for (i = 2; i <= k; i++) { v = s[i]; for (j = i - 1; j >= 1 && s[j] > v; j--) s[j + 1] = s[j]; s[j + 1] = v }
      return k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
    }
    !/^#/ && NF >= 13 {
      if (!($1 in n)) order[++ns] = $1
      k = ++n[$1]; t[$1, k] = $6
      b[$1, k] = $6 > 0 ? $1 / ($6 * 1e3) * 2 * (np - 1) / np : 0
    }
    END { for (i = 1; i <= ns; i++) { s = order[i]; printf "%d,%s,%s,%.3f,%.6g\n", np, impl, s, median(t, s, n[s]), median(b, s, n[s]) } }
  ' "$RAW"/np"$np"-"$impl"-r*.txt
}

# One table per NP from the CSV lines on stdin, then the memcpy reference at the largest sizes.
# Same size and ranks, so the busbw ratio baton/OpenMPI is the time ratio OpenMPI/baton: taken from
# the times, it stays meaningful where busbw rounds to 0.
table() {
  local np=$1 memcpy=$2
  awk -F, -v np="$np" -v memcpy="$memcpy" -v latmax="$LAT_MAX" '
    $1 == np { if (!($3 in seen)) { seen[$3] = 1; order[++ns] = $3 } t[$2, $3] = $4; b[$2, $3] = $5 }
    function ratio(x, y) { return y > 0 ? sprintf("%.2f", x / y) : "-" }
    END {
      printf "\nallreduce, float sum, %d ranks: median over repeats, out-of-place, time = max over ranks\n", np
      printf "%12s  %9s %7s  %9s %7s  %7s %7s  %7s %7s %7s\n", "", "OpenMPI", "", "baton", "", "busbw", "time", \
             "LL", "LL128", "Simple"
      printf "%12s  %9s %7s  %9s %7s  %7s %7s  %7s %7s %7s\n", "size (B)", "time(us)", "busbw", "time(us)", \
             "busbw", "b/O", "b/O", "busbw", "busbw", "busbw"
      for (i = 1; i <= ns; i++) {
        s = order[i]
        printf "%12s  %9.2f %7.2f  %9.2f %7.2f  %7s %7s  %7.2f %7.2f %7.2f\n", s, t["openmpi", s], b["openmpi", s], \
               t["baton", s], b["baton", s], ratio(t["openmpi", s], t["baton", s]), \
               s + 0 <= latmax ? ratio(t["baton", s], t["openmpi", s]) : "", \
               b["baton-LL", s], b["baton-LL128", s], b["baton-Simple", s]
      }
      printf "b/O: baton / OpenMPI (busbw ratio; time ratio = latency ratio, shown up to %d B)\n", latmax
      printf "single-thread memcpy bandwidth: %.2f GB/s (baton-perf --memcpy, median over repeats)\n", memcpy
      for (i = (ns > 2 ? ns - 1 : 1); i <= ns; i++) {
        s = order[i]
        printf "at %d B: busbw / memcpy = baton %s, OpenMPI %s (baton %.2f, OpenMPI %.2f GB/s)\n", s, \
               ratio(b["baton", s], memcpy), ratio(b["openmpi", s], memcpy), b["baton", s], b["openmpi", s]
      }
    }'
}

# --- --latency: the table of small operations (latency_table.h), OpenMPI and baton's two buffer kinds ---
LAT_SRC=tools/bench-peers/mpi_latency.cc
LAT_MPI=$BIN/mpi-latency
LAT_IMPLS=(openmpi baton baton-window)
latency_command() {  # impl np -> CMD
  local impl=$1 np=$2 bind lat=(-n "$ITERS" -w "$WARMUP")
  bind=$(bind_for "$np")
  case $impl in
    openmpi) CMD=(mpirun --allow-run-as-root --oversubscribe -np "$np" --bind-to "$bind" --mca oob_tcp_if_include lo
                  -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=4294967296
                  --mca btl "self,$SHM_BTL" --mca pml ob1 "$LAT_MPI" "${lat[@]}") ;;
    # INIT's INFO lines carry the cache placement that init measured (src/topo/cache_distance.h).
    baton) CMD=(env -u NCCL_PROTO NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "$BIN/baton-run" -n "$np" --bind-to "$bind"
                --no-prefix "$BIN/baton-latency" "${lat[@]}") ;;
    baton-window) CMD=(env -u NCCL_PROTO NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "$BIN/baton-run" -n "$np"
                       --bind-to "$bind" --no-prefix "$BIN/baton-latency" --buffers window "${lat[@]}") ;;
  esac
}
latency_mode() {
  (( NPS_SET )) || NPS=2
  (( ITERS_SET )) || ITERS=200
  (( WARMUP_SET )) || WARMUP=50
  [[ -x $BIN/baton-latency ]] || make -j2 tools
  if [[ ! -x $LAT_MPI || $LAT_SRC -nt $LAT_MPI || tools/bench-peers/latency_table.h -nt $LAT_MPI ]]; then
    echo "== mpicxx $LAT_SRC -> $LAT_MPI"
    mpicxx -O2 -std=c++20 -Wall -Wextra -o "$LAT_MPI" "$LAT_SRC"
  fi
  local csv=$OUT/latency.csv np rep impl f rc placement placements
  rm -rf "$RAW" && mkdir -p "$RAW"
  echo "np,repeat,impl,op,bytes,median_us,min_us,placement" >"$csv.tmp"
  for np in $NPS; do
    placements=""
    for rep in $(seq 1 "$REPEAT"); do
      for impl in "${LAT_IMPLS[@]}"; do
        f="$RAW/lat-np$np-$impl-r$rep.txt" rc=0
        latency_command "$impl" "$np"
        echo "== np $np, repeat $rep/$REPEAT, $impl: ${CMD[*]}"
        timeout 600 "${CMD[@]}" >"$f" 2>"$f.err" || rc=$?
        (( rc == 0 )) || { tail -n 5 "$f" "$f.err" >&2; die "$impl with $np ranks exited with status $rc ($f)"; }
        # NCCL_DEBUG's lines go to stdout, as NCCL's do; "near:108ns" or "far:380ns".
        placement=$(grep -ohE 'caches (near|far apart): a cache line.s round trip between processes took [0-9]+ ns' \
                      "$f" "$f.err" | head -n 1 | awk '{ print ($2 == "near:" ? "near" : "far") ":" $(NF - 1) "ns" }' || true)
        placement=${placement:--}
        [[ $impl == baton ]] && placements+=" $placement"
        awk -v np="$np" -v rep="$rep" -v pl="$placement" '$1 == "latency" {
              if ($7 != 0) { print "wrong results: " $0 > "/dev/stderr"; exit 1 }
              printf "%s,%s,%s,%s,%s,%s,%s,%s\n", np, rep, $2, $3, $4, $5, $6, pl }' "$f" >>"$csv.tmp" ||
          die "$impl with $np ranks computed wrong results ($f)"
      done
    done
    awk -F, -v np="$np" -v pl="$placements" '
      function median(key, k,   i, j, v, s) {
        for (i = 1; i <= k; i++) s[i] = t[key, i] + 0
        for (i = 2; i <= k; i++) { v = s[i]; for (j = i - 1; j >= 1 && s[j] > v; j--) s[j + 1] = s[j]; s[j + 1] = v }
        return k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
      }
      $1 == np { key = $4 SUBSEP $5; if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
                 c = ++n[$3, key]; t[$3, key, c] = $6 }
      END {
        printf "\nlatency, %d ranks: median over repeats of each repeat'"'"'s median, in us (ping-pong: half the round trip)\n", np
        printf "baton'"'"'s cache placement per repeat:%s\n", pl
        printf "%-10s %8s  %9s %9s %9s  %8s %8s\n", "op", "size (B)", "OpenMPI", "baton", "window", "b/O", "w/O"
        for (i = 1; i <= nk; i++) {
          split(order[i], kk, SUBSEP)
          o = median("openmpi" SUBSEP order[i], n["openmpi", order[i]])
          b = median("baton" SUBSEP order[i], n["baton", order[i]])
          w = median("baton-window" SUBSEP order[i], n["baton-window", order[i]])
          printf "%-10s %8s  %9.2f %9.2f %9.2f  %7.2fx %7.2fx\n", kk[1], kk[2], o, b, w, b / o, w / o
        }
        print "b/O, w/O: baton (plain, windows) time over OpenMPI'"'"'s; issue 45'"'"'s goal for 8 B AllReduce: <= 0.8x"
      }' "$csv.tmp"
  done
  mv "$csv.tmp" "$csv"
  echo
  echo "wrote $csv (raw outputs in $RAW/)"
}
if (( LATENCY )); then latency_mode; exit 0; fi

rm -rf "$RAW"
mkdir -p "$RAW" "$OUT"
trap 'rm -f "$CSV.tmp" "$MEMCSV.tmp"' EXIT  # a failed run leaves the previous CSV in place
echo "np,impl,size,time_us,busbw_GBs" >"$CSV.tmp"
echo "np,memcpy_GBs" >"$MEMCSV.tmp"
for np in $NPS; do
  memcpys=()
  for rep in $(seq 1 "$REPEAT"); do
    line=$("$BIN/baton-perf" --memcpy allreduce)
    memcpys+=("$(grep -oE 'memcpy bandwidth: [0-9.]+' <<<"$line" | grep -oE '[0-9.]+$')")
    for impl in "${IMPLS[@]}"; do run_one "$impl" "$np" "$rep"; done
  done
  memcpy=$(printf '%s\n' "${memcpys[@]}" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  echo "$np,$memcpy" >>"$MEMCSV.tmp"
  lines=$(for impl in "${IMPLS[@]}"; do medians "$np" "$impl"; done)
  echo "$lines" >>"$CSV.tmp"
  table "$np" "$memcpy" <<<"$lines"
done
mv "$CSV.tmp" "$CSV"
mv "$MEMCSV.tmp" "$MEMCSV"
echo
echo "wrote $CSV and $MEMCSV (raw outputs in $RAW/)"
if (( PLOT )); then plot; fi
