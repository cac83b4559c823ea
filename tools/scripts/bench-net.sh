#!/usr/bin/env bash
# Network comparison: baton's NET transport against Gloo (TCP) and OpenMPI (TCP BTL), between two
# "hosts" made of network namespaces on this machine (tests/net/netns.sh), one rank per host.
#
#   tools/scripts/bench-net.sh [--size 64M] [--repeat 5] [--iters 10] [--warmup 3] [--gloo-algo ring] [--no-pin]
#   tools/scripts/bench-net.sh --latency [--repeat 5] [-n 200] [-w 50] [--sizes 8,64,1K,8K,64K]
#                              [--ops allreduce,broadcast,pingpong] [--no-pin]     the latency table (below)
#
# Each host's processes run on their own core (taskset -c i; --no-pin turns it off), for all three.
#
# Brings up hosts PREFIX-h0 and PREFIX-h1 (10.77.0.1 and 10.77.0.2 on veth0, joined by a bridge) and
# removes them on exit. Per repeat, one program at a time, a float-sum allreduce of --size bytes:
#   gloo     build/bin/gloo-allreduce-ring in both namespaces (gloo::AllreduceRing unless --gloo-algo,
#            TCP on veth0, FileStore rendezvous in raw/)
#   openmpi  build/bin/mpi-allreduce-sweep under mpirun started in PREFIX-h0, whose rsh launcher starts
#            rank 1's daemon in PREFIX-h1 (tests/net/netns.sh rsh); pml ob1, btl tcp,self on veth0
#   baton    build/bin/baton-perf in both namespaces (NCCL_HOSTID per host, NCCL_SOCKET_IFNAME=veth0,
#            NCCL_COMM_ID=10.77.0.1:PORT), plus the words of $BATON_NET_ENV
#            (e.g. BATON_NET_ENV="NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2")
# Time = max over ranks; OpenMPI and baton out-of-place, Gloo in place (its algorithms' only mode).
# veth0's tx bytes on both hosts are recorded per run; a run that did not send its data over veth0
# counts as failed. Prints, per implementation, the median over repeats (time, algbw, busbw) and the
# busbw ratios baton/Gloo (goal >= 1.5) and baton/OpenMPI (goal >= 1). A Gloo or OpenMPI failure or
# #wrong stops the script; a baton failure is reported ("baton: failed (see log)") and the rest goes
# on. Writes build/bench/net/net.csv (every run, then the medians) and raw logs in build/bench/net/raw/.
# Needs root. Run it on an otherwise idle machine: on 2 cores a second busy program halves everyone's
# numbers. Environment: OUT (default build/bench/net), BATON_NETNS_PREFIX (default bt), BATON_NET_ENV,
# BENCH_NET_TIMEOUT (seconds per run, default 120).
#
# --latency: the latency table of issue 45 across the same two hosts: 8 B, 64 B, 1 KiB, 8 KiB and
# 64 KiB AllReduce, Broadcast and a send/recv ping-pong (tools/bench-peers/latency_table.h: one timing
# loop for every library; --sizes and --ops choose others). Per repeat, with the pinning, environment
# and rendezvous above: gloo build/bin/gloo-latency (gloo::allreduce RING, gloo::broadcast,
# unbound-buffer send/recv), openmpi build/bin/mpi-latency, baton build/bin/baton-latency (built by
# `make tools`). -n (--iters: calls per timed sample) and -w (--warmup: untimed calls per row) default
# to 200 and 50 here; --size and --gloo-algo do not apply. Each host must have sent the timed calls'
# bytes over veth0. Prints per (op, size) the median over repeats of each program's median time, and
# the time ratios baton/OpenMPI (goals: 8 B AllReduce <= 1.5x, 64 KiB AllReduce <= 1x) and baton/Gloo
# (goal: 8 B AllReduce <= 0.5x); failures stop or are reported as above. Writes
# build/bench/net/latency.csv (every run's rows, then the medians) and raw logs in
# build/bench/net/raw-latency/ (the allreduce runs' raw/ is left alone).
set -euo pipefail
cd "$(dirname "$0")/../.."

SIZE=64M REPEAT=5 ITERS=10 WARMUP=3 GLOO_ALGO=ring PIN=1 LATENCY=0 ITERS_SET=0 WARMUP_SET=0 SIZES="" OPS=""
OUT=${OUT:-build/bench/net}
PREFIX=${BATON_NETNS_PREFIX:-bt}
LIMIT=${BENCH_NET_TIMEOUT:-120}
BIN=build/bin
NETNS=tests/net/netns.sh
GLOO_SRC=tools/bench-peers/gloo_allreduce_ring.cc
GLOO_BIN=$BIN/gloo-allreduce-ring
MPI_SRC=tools/bench-peers/mpi_allreduce_sweep.cc
MPI_BIN=$BIN/mpi-allreduce-sweep
RAW=$OUT/raw
CSV=$OUT/net.csv
IMPLS=(gloo openmpi baton)
NRANKS=2 IFACE=veth0
HOSTS=("$PREFIX-h0" "$PREFIX-h1")
ADDRS=(10.77.0.1 10.77.0.2)

die() { echo "bench-net.sh: $*" >&2; exit 1; }
usage() { sed -n '2,41s/^# \{0,1\}//p' "$0"; }

while (( $# )); do
  case $1 in
    --size) SIZE=${2:?--size needs a size}; shift ;;
    --repeat) REPEAT=${2:?--repeat needs a number}; shift ;;
    --iters|-n) ITERS=${2:?--iters needs a number} ITERS_SET=1; shift ;;
    --warmup|-w) WARMUP=${2:?--warmup needs a number} WARMUP_SET=1; shift ;;
    --latency) LATENCY=1 ;;
    --sizes) SIZES=${2:?--sizes needs a list of sizes}; shift ;;
    --ops) OPS=${2:?--ops needs a list of allreduce, broadcast, pingpong}; shift ;;
    --no-pin) PIN=0 ;;
    --gloo-algo) GLOO_ALGO=${2:?--gloo-algo needs ring, ring_chunked, halving_doubling or new_ring}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
  shift
done
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "--repeat must be a positive number (got '$REPEAT')"
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || die "--iters must be a positive number (got '$ITERS')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup must be a number (got '$WARMUP')"
# The same K/M/G (binary) sizes the three programs accept; the float count must be whole.
BYTES=$(awk -v s="$SIZE" 'BEGIN {
  if (!match(s, /^[0-9]+[kKmMgG]?[bB]?$/)) exit 1
  match(s, /^[0-9]+/); v = substr(s, 1, RLENGTH) + 0; u = toupper(substr(s, RLENGTH + 1, 1))
  printf "%.0f\n", v * (u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1) }') ||
  die "--size must be a number with an optional K, M or G (got '$SIZE')"
(( BYTES >= 4 && BYTES % 4 == 0 )) || die "--size must be a positive multiple of 4 bytes (got $SIZE)"
read -ra BATON_EXTRA <<<"${BATON_NET_ENV:-}"

# Each program's arguments: the allreduce of --size, or (--latency) the latency table's.
BATON_BIN=$BIN/baton-perf
GLOO_ARGS=(-b "$SIZE" -n "$ITERS" -w "$WARMUP" --algo "$GLOO_ALGO")
MPI_ARGS=(-b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -a 3)
BATON_ARGS=(allreduce -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -a 3)
if (( LATENCY )); then
  (( ITERS_SET )) || ITERS=200
  (( WARMUP_SET )) || WARMUP=50
  GLOO_SRC=tools/bench-peers/gloo_latency.cc GLOO_BIN=$BIN/gloo-latency
  MPI_SRC=tools/bench-peers/mpi_latency.cc MPI_BIN=$BIN/mpi-latency
  BATON_BIN=$BIN/baton-latency
  CSV=$OUT/latency.csv RAW=$OUT/raw-latency
  GLOO_ARGS=(-n "$ITERS" -w "$WARMUP")
  if [[ -n $SIZES ]]; then GLOO_ARGS+=(--sizes "$SIZES"); fi
  if [[ -n $OPS ]]; then GLOO_ARGS+=(--ops "$OPS"); fi
  MPI_ARGS=("${GLOO_ARGS[@]}") BATON_ARGS=("${GLOO_ARGS[@]}")
  # The rows each program prints, and what its timed calls (one sample of ITERS per row at least)
  # put on each host's veth0 at least: an allreduce sends size x (n-1)/n per rank, a broadcast size
  # from the root (host 0), a ping-pong size each way.
  read -r LAT_ROWS LAT_LEAST0 LAT_LEAST1 < <(awk -v sizes="${SIZES:-8,64,1K,8K,64K}" \
      -v ops="${OPS:-allreduce,broadcast,pingpong}" -v iters="$ITERS" -v n="$NRANKS" 'BEGIN {
    ns = split(sizes, s, ","); no = split(ops, o, ",")
    for (i = 1; i <= ns; i++) {
      if (!match(s[i], /^[0-9]+[kKmMgG]?[bB]?$/)) { print "bad"; exit }
      match(s[i], /^[0-9]+/); v = substr(s[i], 1, RLENGTH) + 0; u = toupper(substr(s[i], RLENGTH + 1, 1))
      b = v * (u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1)
      if (b < 4 || b % 4) { print "bad"; exit }
      for (j = 1; j <= no; j++) {
        if (o[j] == "allreduce") { h0 += b * (n - 1) / n; h1 += b * (n - 1) / n }
        else if (o[j] == "broadcast") h0 += b
        else if (o[j] == "pingpong") { h0 += b; h1 += b }
        else { print "bad"; exit }
      }
    }
    printf "%d %.0f %.0f\n", ns * no, h0 * iters, h1 * iters }')
  [[ $LAT_ROWS =~ ^[0-9]+$ ]] ||
    die "--sizes must list multiples of 4 bytes (K, M, G allowed) and --ops allreduce, broadcast, pingpong"
fi

# --- build: baton's tools are assumed built; the two peer programs are ours to (re)build ---
for tool in mpirun mpicxx g++ ip ss timeout; do
  command -v "$tool" >/dev/null || die "$tool not found (tools/install-deps.sh installs what this needs)"
done
[[ -f /usr/include/gloo/allreduce_ring.h ]] ||
  die "Gloo not found: apt-get install -y libgloo-dev (or tools/install-deps.sh)"
[[ -x $BATON_BIN ]] || make -j2 tools
[[ -x $BATON_BIN ]] || die "$BATON_BIN is missing after make tools"
mkdir -p "$BIN"
# The peer programs include these headers (bench_args.h; gloo_mesh.h for Gloo; latency_table.h in --latency mode).
HEADERS=(tools/bench-peers/bench_args.h tools/bench-peers/gloo_mesh.h tools/bench-peers/latency_table.h)
stale() {  # binary source: whether binary needs (re)building
  local h
  [[ -x $1 && ! $2 -nt $1 ]] || return 0
  for h in "${HEADERS[@]}"; do [[ ! $h -nt $1 ]] || return 0; done
  return 1
}
if stale "$GLOO_BIN" "$GLOO_SRC"; then
  echo "== g++ $GLOO_SRC -> $GLOO_BIN"
  g++ -std=c++20 -O2 -Wall -Wextra -o "$GLOO_BIN" "$GLOO_SRC" -lgloo -pthread
fi
if stale "$MPI_BIN" "$MPI_SRC"; then
  echo "== mpicxx $MPI_SRC -> $MPI_BIN"
  mpicxx -O2 -std=c++20 -Wall -Wextra -o "$MPI_BIN" "$MPI_SRC"
fi

# --- the hosts: gone again however the script ends; our rank processes are stopped first ---
rc=0
"$NETNS" check || rc=$?
(( rc == 0 )) || exit "$rc"  # check said why; 77 = cannot make namespaces here (skip)
cleanup() {
  local -a pids
  mapfile -t pids < <(jobs -p)
  if (( ${#pids[@]} )); then kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; fi
  "$NETNS" down
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # so that EXIT's cleanup runs on ^C and kill too
"$NETNS" up "$NRANKS"
# One number to tell, afterwards, whether the machine was idle: other work swings these results 2x.
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
rm -rf "$RAW"
mkdir -p "$RAW"

txbytes() { ip netns exec "$1" cat "/sys/class/net/$IFACE/statistics/tx_bytes"; }

# A listening port that is free in host 0, where rank 0 starts baton's bootstrap root.
free_port() {
  local used port
  used=$(ip netns exec "${HOSTS[0]}" ss -Htln | awk '{ print $4 }')
  while :; do
    port=$((20000 + RANDOM % 30000))
    grep -q ":$port\$" <<<"$used" || { echo "$port"; return; }
  done
}

# Host i's processes run on core i (taskset), for every implementation alike: separate machines
# would each have their own CPU, and unpinned the scheduler sometimes stacks both hosts' busy
# threads on one core (baton then ran 32-39 ms or 62-80 ms per 64 MiB from one repeat to the next).
NCPU=$(nproc)
MPI_PIN=()
if ((PIN)); then MPI_PIN=(sh -c 'exec taskset -c "$((OMPI_COMM_WORLD_RANK % $(nproc)))" "$0" "$@"'); fi

# The command of rank $2 for implementation $1 (gloo or baton), in the array CMD.
rank_command() {
  local impl=$1 i=$2 rep=$3 pin=()
  if ((PIN)); then pin=(taskset -c $((i % NCPU))); fi
  case $impl in
    gloo) CMD=(ip netns exec "${HOSTS[i]}" "${pin[@]}" "$GLOO_BIN" --rank "$i" --size "$NRANKS" --iface "$IFACE"
               --store "$RAW/gloo-store" --prefix "r$rep" "${GLOO_ARGS[@]}") ;;
    baton) CMD=(ip netns exec "${HOSTS[i]}" env "NCCL_HOSTID=${HOSTS[i]}" "NCCL_SOCKET_IFNAME=$IFACE"
                "BATON_RANK=$i" "BATON_NRANKS=$NRANKS" "NCCL_COMM_ID=${ADDRS[0]}:$PORT" "${BATON_EXTRA[@]}"
                "${pin[@]}" "$BATON_BIN" "${BATON_ARGS[@]}") ;;
  esac
}

# OpenMPI's processes reach their daemon's PMIx server over TCP on 127.0.0.1, which is per network
# namespace: started by one mpirun with `ip netns exec`, a rank in another namespace dies in
# MPI_Init ("OPAL ERROR: Unreachable"). So each host gets its own daemon, as on two machines: mpirun
# runs in host 0 and starts rank 1's orted in host 1 through the rsh agent, and the daemons talk over
# veth0 (oob_tcp_if_include). --bind-to none: each daemon thinks it owns the machine and would bind
# its rank to core 0, both ranks on one core (a third of the bandwidth on this machine).
# MALLOC_MMAP_MAX_=0 as in bench-peers.sh: glibc would otherwise mmap each large temporary buffer
# of OpenMPI's afresh and page-fault it on every call.
mpi_command() {
  CMD=(ip netns exec "${HOSTS[0]}" mpirun --allow-run-as-root --oversubscribe --bind-to none
       --mca plm_rsh_agent "$PWD/$NETNS rsh" --host "${ADDRS[0]}:1,${ADDRS[1]}:1" -np "$NRANKS"
       --mca pml ob1 --mca btl "tcp,self" --mca btl_tcp_if_include "$IFACE" --mca oob_tcp_if_include "$IFACE"
       -x MALLOC_MMAP_MAX_=0 -x MALLOC_TRIM_THRESHOLD_=4294967296
       "${MPI_PIN[@]}" "$PWD/$MPI_BIN" "${MPI_ARGS[@]}")
}

# Runs one implementation once. Output: rank 0's in $RAW/<impl>-r<rep>.txt (rank i's in .rank<i>
# for the two-launch implementations); sets RESULT to "time_us wrong tx0 tx1" ("tx0 tx1" with
# --latency, whose rows stay in the output) and returns 0, or sets WHY and returns 1.
run_one() {
  local impl=$1 rep=$2 f="$RAW/$1-r$2.txt" i rc=0 tx0 tx1 parsed
  local -a pids=()
  tx0=$(txbytes "${HOSTS[0]}") tx1=$(txbytes "${HOSTS[1]}")
  if [[ $impl == openmpi ]]; then
    mpi_command
    echo "== repeat $rep/$REPEAT, $impl: ${CMD[*]}" | tee "$f.cmd"
    timeout -k 5 "$LIMIT" "${CMD[@]}" >"$f" 2>&1 || rc=$?
  else
    PORT=$(free_port)
    : >"$f.cmd"
    for (( i = 0; i < NRANKS; i++ )); do
      rank_command "$impl" "$i" "$rep"
      echo "== repeat $rep/$REPEAT, $impl rank $i: ${CMD[*]}" | tee -a "$f.cmd"
      timeout -k 5 "$LIMIT" "${CMD[@]}" >"$f.rank$i" 2>&1 &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=$?; done
    cp "$f.rank0" "$f"
  fi
  tx0=$(( $(txbytes "${HOSTS[0]}") - tx0 )) tx1=$(( $(txbytes "${HOSTS[1]}") - tx1 ))
  if (( LATENCY )); then
    # Every row present, each with wrong = 0 (a failed call counts as wrong, latency_table.h).
    parsed=$(awk '$1 == "latency" { n++; if ($7 != 0) bad = bad " " $3 "/" $4 ":" $7 }
                  END { print n + 0, bad == "" ? "-" : bad }' "$f")
    if (( rc == 124 || rc == 137 )); then WHY="timed out after $LIMIT s"; return 1; fi
    if [[ ${parsed#* } != - ]]; then WHY="wrong results (op/bytes:#wrong${parsed#* })"; return 1; fi
    if [[ ${parsed%% *} != "$LAT_ROWS" ]]; then
      WHY="exit status $rc, ${parsed%% *} of $LAT_ROWS result rows"
      return 1
    fi
    if (( rc != 0 )); then WHY="exit status $rc"; return 1; fi
    if (( tx0 < LAT_LEAST0 || tx1 < LAT_LEAST1 || tx0 == 0 || tx1 == 0 )); then
      WHY="only $tx0 and $tx1 bytes left the hosts' $IFACE (expected >= $LAT_LEAST0 and $LAT_LEAST1)"
      return 1
    fi
    RESULT="$tx0 $tx1"
    return 0
  fi
  # The row: out-of-place time and #wrong (plus the in-place #wrong where the program has that half).
  parsed=$(awk '!/^#/ && NF >= 9 && $1 ~ /^[0-9]+$/ { w = $9 + (NF >= 13 ? $13 : 0); print $6, w; exit }' "$f")
  if (( rc == 124 || rc == 137 )); then WHY="timed out after $LIMIT s"; return 1; fi
  if [[ -z $parsed ]]; then WHY="exit status $rc, no result row"; return 1; fi
  if [[ ${parsed#* } != 0 ]]; then WHY="wrong results (#wrong ${parsed#* })"; return 1; fi
  if (( rc != 0 )); then WHY="exit status $rc"; return 1; fi
  # Every allreduce algorithm sends at least size x (n-1)/n per rank per call, so the timed calls
  # alone put this much on each host's veth0; less means the data went some other way.
  local least=$(( ITERS * BYTES * (NRANKS - 1) / NRANKS ))
  if (( tx0 < least || tx1 < least )); then
    WHY="only $tx0 and $tx1 bytes left the hosts' $IFACE (expected >= $least each)"
    return 1
  fi
  RESULT="${parsed% *} $tx0 $tx1"
}

# One CSV row: impl,repeat,size,time_us,algbw,busbw,tx0,tx1,status
# A run of $1 in repeat $2 failed ($WHY): a peer's failure stops the script, baton's is recorded
# in BATON_FAILED and reported, and the rest goes on.
run_failed() {
  if [[ $1 != baton ]]; then
    tail -n 20 "$RAW/$1-r$2.txt"* >&2 || true
    die "$1 failed in repeat $2: $WHY (logs: $RAW/$1-r$2.txt*)"
  fi
  BATON_FAILED="$WHY; see log $RAW/baton-r$2.txt.rank0 and .rank1"
  echo "   baton: failed ($BATON_FAILED)"
}

csv_row() {
  local impl=$1 rep=$2 time=$3 tx0=$4 tx1=$5 status=$6
  awk -v impl="$impl" -v rep="$rep" -v b="$BYTES" -v t="$time" -v n="$NRANKS" -v tx0="$tx0" -v tx1="$tx1" \
      -v st="$status" 'BEGIN {
    alg = t > 0 ? b / (t * 1e3) : 0
    printf "%s,%s,%d,%s,%.4f,%.4f,%s,%s,%s\n", impl, rep, b, t, alg, alg * 2 * (n - 1) / n, tx0, tx1, st }'
}

# --latency: every run's rows (impl,repeat,op,size_B,median_us,min_us,tx0,tx1,status), then per
# (impl, op, size) the median over repeats of median_us (and the least min_us), then the table.
latency_main() {
  local rep impl tx0 tx1
  echo "impl,repeat,op,size_B,median_us,min_us,veth_tx_h0_B,veth_tx_h1_B,status" >"$CSV"
  BATON_FAILED=""
  for rep in $(seq 1 "$REPEAT"); do
    for impl in "${IMPLS[@]}"; do
      if [[ $impl == baton && -n $BATON_FAILED ]]; then continue; fi  # one failed run is enough to know
      if run_one "$impl" "$rep"; then
        read -r tx0 tx1 <<<"$RESULT"
        awk -v impl="$impl" -v rep="$rep" -v tx0="$tx0" -v tx1="$tx1" '$1 == "latency" {
          printf "%s,%s,%s,%s,%s,%s,%s,%s,ok\n", impl, rep, $3, $4, $5, $6, tx0, tx1 }' \
          "$RAW/$impl-r$rep.txt" >>"$CSV"
        awk -v impl="$impl" -v tx0="$tx0" -v tx1="$tx1" '
          $1 == "latency" && $3 == "allreduce" { a = a sprintf(" %s B %s us,", $4, $5) }
          END { printf "   %s: allreduce%s veth0 tx %s / %s B\n", impl, a == "" ? " -," : a, tx0, tx1 }' \
          "$RAW/$impl-r$rep.txt"
      else
        echo "$impl,$rep,,,,,,,failed: ${WHY//,/;}" >>"$CSV"
        run_failed "$impl" "$rep"
      fi
    done
  done

  awk -F, '$9 == "ok" && $2 != "median" {
      key = $1 SUBSEP $3 SUBSEP $4
      if (!(key in k)) { order[++nk] = key; lo[key] = $6 + 0 }
      t[key, ++k[key]] = $5 + 0
      if ($6 + 0 < lo[key]) lo[key] = $6 + 0
    }
    END {
      for (i = 1; i <= nk; i++) {
        key = order[i]; c = k[key]
        for (j = 1; j <= c; j++) s[j] = t[key, j]
        for (j = 2; j <= c; j++) { v = s[j]; for (m = j - 1; m >= 1 && s[m] > v; m--) s[m + 1] = s[m]; s[m + 1] = v }
        split(key, f, SUBSEP)
        med = c % 2 ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2
        printf "%s,median,%s,%s,%.3f,%.3f,,,ok\n", f[1], f[2], f[3], med, lo[key]
      }
    }' "$CSV" >"$CSV.medians"
  cat "$CSV.medians" >>"$CSV"
  rm -f "$CSV.medians"

  awk -F, -v n="$NRANKS" -v reps="$REPEAT" -v bfail="$BATON_FAILED" -v load0="$LOAD0" \
      -v load1="$(cut -d' ' -f1 /proc/loadavg)" '
    $2 == "median" {
      key = $3 SUBSEP $4
      if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
      t[$1, key] = $5
    }
    function cell(impl, key) {
      return ((impl, key) in t) ? sprintf(" %10.2f", t[impl, key]) : sprintf(" %10s", "failed")
    }
    function ratio(a, b, key) {
      if (!((a, key) in t) || !((b, key) in t) || t[b, key] <= 0) return sprintf(" %13s", "-")
      return sprintf(" %12.2fx", t[a, key] / t[b, key])
    }
    function goal(name, op, bytes, peer, want,   key, r) {
      key = op SUBSEP bytes
      if (!(key in seen)) return sprintf("%-34s not measured (not among --sizes/--ops)", name)
      if (!(("baton", key) in t)) return sprintf("%-34s not measured (baton failed)", name)
      r = t["baton", key] / t[peer, key]
      return sprintf("%-34s %.2fx  (goal <= %gx: %s)", name, r, want, r <= want ? "met" : "not met")
    }
    END {
      printf "\nlatency, %d hosts (network namespaces over veth), 1 rank each: median over %d repeats\n", n, reps
      print "of each run'"'"'s median time in us (rank 0'"'"'s clock; ping-pong: half the round trip);"
      print "ratios: baton'"'"'s time over the other'"'"'s"
      printf "%-10s %9s %10s %10s %10s %13s %13s\n", "op", "size (B)", "Gloo", "OpenMPI", "baton", "baton/OpenMPI",
             "baton/Gloo"
      for (i = 1; i <= nk; i++) {
        split(order[i], f, SUBSEP)
        printf "%-10s %9s%s%s%s%s%s\n", f[1], f[2], cell("gloo", order[i]), cell("openmpi", order[i]),
               cell("baton", order[i]), ratio("baton", "openmpi", order[i]), ratio("baton", "gloo", order[i])
      }
      if (bfail != "") printf "baton: failed (%s)\n", bfail
      print "time ratios against issue 45'"'"'s goals:"
      print "  " goal("8 B AllReduce, baton / OpenMPI", "allreduce", 8, "openmpi", 1.5)
      print "  " goal("8 B AllReduce, baton / Gloo", "allreduce", 8, "gloo", 0.5)
      print "  " goal("64 KiB AllReduce, baton / OpenMPI", "allreduce", 65536, "openmpi", 1)
      printf "load average (1 min): %s before, %s after (the benchmark itself keeps about 2 busy)\n", load0, load1
      if (load0 + 0 > 1) print "warning: the machine was busy before the run started; these numbers are not trustworthy"
    }' "$CSV"
  echo
  echo "wrote $CSV (raw outputs in $RAW/)"
}
if (( LATENCY )); then latency_main; exit 0; fi

echo "impl,repeat,size_B,time_us,algbw_GBs,busbw_GBs,veth_tx_h0_B,veth_tx_h1_B,status" >"$CSV"
BATON_FAILED=""
for rep in $(seq 1 "$REPEAT"); do
  for impl in "${IMPLS[@]}"; do
    if [[ $impl == baton && -n $BATON_FAILED ]]; then continue; fi  # one failed run is enough to know
    if run_one "$impl" "$rep"; then
      read -r time tx0 tx1 <<<"$RESULT"
      csv_row "$impl" "$rep" "$time" "$tx0" "$tx1" ok >>"$CSV"
      echo "   $impl: $time us, veth0 tx $tx0 / $tx1 B"
    else
      csv_row "$impl" "$rep" "" "" "" "failed: $WHY" >>"$CSV"
      run_failed "$impl" "$rep"
    fi
  done
done

# Medians over the repeats (of the time; bandwidths follow from it), appended to the CSV.
for impl in "${IMPLS[@]}"; do
  med=$(awk -F, -v impl="$impl" '$1 == impl && $9 == "ok" { t[++k] = $4 + 0 }
    END { if (!k) exit; for (i = 2; i <= k; i++) { v = t[i]; for (j = i - 1; j >= 1 && t[j] > v; j--) t[j + 1] = t[j]; t[j + 1] = v }
          print k % 2 ? t[(k + 1) / 2] : (t[k / 2] + t[k / 2 + 1]) / 2 }' "$CSV")
  if [[ -n $med ]]; then csv_row "$impl" median "$med" "" "" ok >>"$CSV"; fi
done

awk -F, -v bytes="$BYTES" -v n="$NRANKS" -v reps="$REPEAT" -v algo="$GLOO_ALGO" -v bfail="$BATON_FAILED" \
    -v load0="$LOAD0" -v load1="$(cut -d' ' -f1 /proc/loadavg)" '
  $2 == "median" { t[$1] = $4; alg[$1] = $5; bus[$1] = $6 }
  function goal(name, r, want) {
    if (!("baton" in bus)) return sprintf("%-16s not measured (baton failed)", name)
    return sprintf("%-16s %.2fx  (goal >= %gx: %s)", name, r, want, r >= want ? "met" : "not met")
  }
  END {
    printf "\nallreduce, float sum, %d B, %d hosts (network namespaces over veth), 1 rank each:\n", bytes, n
    printf "median over %d repeats, time = max over ranks (Gloo algorithm: %s)\n", reps, algo
    printf "%-9s %10s %14s %14s\n", "impl", "time (ms)", "algbw (GB/s)", "busbw (GB/s)"
    split("gloo openmpi baton", order, " ")
    for (i = 1; i <= 3; i++) {
      m = order[i]
      if (m in t) printf "%-9s %10.2f %14.3f %14.3f\n", m, t[m] / 1e3, alg[m], bus[m]
      else printf "%-9s failed (%s)\n", m, bfail
    }
    print "busbw ratios:"
    print "  " goal("baton / Gloo", ("baton" in bus) ? bus["baton"] / bus["gloo"] : 0, 1.5)
    print "  " goal("baton / OpenMPI", ("baton" in bus) ? bus["baton"] / bus["openmpi"] : 0, 1)
    printf "load average (1 min): %s before, %s after (the benchmark itself keeps about 2 busy)\n", load0, load1
    if (load0 + 0 > 1) print "warning: the machine was busy before the run started; these numbers are not trustworthy"
  }' "$CSV"
echo
echo "wrote $CSV (raw outputs in $RAW/)"
