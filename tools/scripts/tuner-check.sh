#!/usr/bin/env bash
# Is the tuner's default choice as fast as the best forced pair? (issue: "within 10% of the best
# forced (algorithm, protocol) at every size"). Asks baton-perf --explain which algorithm and
# protocol the tuner picks per size, runs --compare tuned plus every forced Ring and Tree pair
# REPEAT times, takes the median time per
# stage and size, and prints, per size, the forced median of the tuner's pick / the best forced
# median ("pick/best": the tuner's decision, measured without the stage-to-stage noise of comparing
# two runs of the same configuration), and the tuned stage's own median / best ("tuned/best").
#
#   tools/scripts/tuner-check.sh [--repeat 5] -- LAUNCH...     e.g.
#   tools/scripts/tuner-check.sh -- build/bin/baton-run -n 2 --no-prefix build/bin/baton-perf allreduce -b 8 -e 256M -f 4
#   tools/scripts/tuner-check.sh -- build/bin/baton-perf allreduce -t 2 -b 8 -e 256M -f 4
# Run it on an idle machine; single runs on a shared 2-core VM swing by 2x, which is why it repeats.
# The first stage of a --compare run is slower than later stages of the same configuration (on this
# VM 1.6x at 512 B, up to 5x at 2 MiB, for the first second or two of a run: ring-LL128 three times
# gave 0.84/0.69/0.51 us and 833/770/164 us), and "tuned" used to be that stage: a throwaway stage
# of the tuner's own choice now runs first and is not counted (issue 45, "the default path's cost").
set -euo pipefail
repeat=5
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --repeat) repeat=$2; shift 2 ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "tuner-check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ ${1:-} == -- ]] && shift
[[ $# -gt 0 ]] || { echo "tuner-check.sh: give the launch command after --" >&2; exit 2; }
# Every (algorithm, protocol) forced, against the tuner's own choice.
FORCED=ring-LL,ring-LL128,ring-Simple,tree-LL,tree-LL128,tree-Simple
NSTAGES=7
tmp=$(mktemp)
picks=$(mktemp)
trap 'rm -f "$tmp" "$picks"' EXIT
"$@" --explain | awk '!/^#/ && NF >= 8 {print $1, $NF}' >"$picks"
for ((r = 1; r <= repeat; r++)); do
  "$@" --compare "tuned,tuned,$FORCED" | grep -v '^#' >>"$tmp"  # the first: the warm-up, not counted
  if awk -v n="$((NSTAGES + 1))" '{for (s = 0; s < n; s++) if ($(8 + 3 * s) != 0) bad = 1} END {exit !bad}' "$tmp"; then
    echo "tuner-check.sh: wrong results (#wrong != 0)" >&2; exit 1
  fi
done
awk -v picks="$picks" -v n="$NSTAGES" -v stageNames="tuned,$FORCED" '
  BEGIN { while ((getline line < picks) > 0) { split(line, f, " "); split(f[2], ap, "/"); pick[f[1]] = tolower(ap[1]) "-" ap[2] } }
  function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && arr[j-1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j-1]; arr[j-1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
  }
  { size = $1; if (!(size in seen)) { seen[size] = 1; order[++ns] = size }
    k = ++cnt[size]; for (s = 0; s < n; s++) t[size, s, k] = $(6 + 3 * (s + 1)) }
  END {
    split(stageNames, names, ",")
    printf "%12s", "size(B)"; for (s = 1; s <= n; s++) printf " %11s", names[s]
    printf " %11s %11s %9s %10s\n", "best", "pick", "pick/best", "tuned/best"
    worst = 0; over = 0
    for (i = 1; i <= ns; i++) {
      size = order[i]
      for (s = 0; s < n; s++) { delete a; for (k = 1; k <= cnt[size]; k++) a[k] = t[size, s, k]; m[s] = median(a, cnt[size]) }
      best = 1; for (s = 2; s < n; s++) if (m[s] < m[best]) best = s
      p = 0; for (s = 1; s < n; s++) if (names[s + 1] == pick[size]) p = s
      r = p ? m[p] / m[best] : 99; if (r > worst) worst = r; if (r > 1.10) over++
      printf "%12s", size; for (s = 0; s < n; s++) printf " %11.2f", m[s]
      printf " %11s %11s %9.2f %10.2f\n", names[best + 1], pick[size], r, m[0] / m[best]
    }
    printf "median of %d runs per stage; the tuner picks a pair within 10%% of the best forced one at %d of %d sizes (worst %.2fx)\n",
           cnt[order[1]], ns - over, ns, worst
  }' "$tmp"
