#!/usr/bin/python3
"""Draws busbw vs size from tools/scripts/bench-peers.sh's CSV: one panel per rank count, one line per impl.

    /usr/bin/python3 tools/scripts/plot-perf.py        # build/bench/peers.csv -> docs/figures/allreduce-busbw-vs-size.png

Run it with Debian's python3 (python3-matplotlib, installed by tools/install-deps.sh): no pip, no venv.
When build/bench/peers-memcpy.csv exists, each panel also shows the single-thread memcpy bandwidth
measured in the same run, the ceiling that docs/perf.md compares busbw with.
"""
import argparse
import csv
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only: no display on the build machines
import matplotlib.pyplot as plt  # noqa: E402

# Fixed colours, so the same impl looks the same in every figure the project keeps.
STYLE = {
    "openmpi": dict(color="black", marker="s"),
    "baton": dict(color="tab:blue", marker="o"),
    "baton-LL": dict(color="tab:orange", marker="^", linestyle="--"),
    "baton-LL128": dict(color="tab:green", marker="v", linestyle="--"),
    "baton-Simple": dict(color="tab:red", marker="d", linestyle="--"),
}


def size_label(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift:
            return f"{b >> shift}{unit}"
    return str(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", default="build/bench/peers.csv")
    ap.add_argument("--memcpy", default="build/bench/peers-memcpy.csv")
    ap.add_argument("--out", default="docs/figures/allreduce-busbw-vs-size.png")
    args = ap.parse_args()

    data = defaultdict(lambda: defaultdict(list))  # np -> impl -> [(size, busbw)]
    with open(args.csv, newline="") as f:
        for row in csv.DictReader(f):
            data[int(row["np"])][row["impl"]].append((int(row["size"]), float(row["busbw_GBs"])))
    if not data:
        raise SystemExit(f"plot-perf.py: no rows in {args.csv}")
    memcpy = {}
    if os.path.exists(args.memcpy):
        with open(args.memcpy, newline="") as f:
            memcpy = {int(r["np"]): float(r["memcpy_GBs"]) for r in csv.DictReader(f)}

    nps = sorted(data)
    fig, axes = plt.subplots(1, len(nps), figsize=(6.5 * len(nps), 4.5), sharey=True, squeeze=False)
    for ax, np_ in zip(axes[0], nps):
        sizes = set()
        for impl, pts in data[np_].items():
            pts.sort()
            sizes.update(s for s, _ in pts)
            ax.plot([s for s, _ in pts], [b for _, b in pts], label=impl, markersize=3,
                    **STYLE.get(impl, {}))
        if np_ in memcpy:
            ax.axhline(memcpy[np_], color="gray", linestyle=":", label=f"memcpy 1 thread ({memcpy[np_]:.1f} GB/s)")
        ax.set_xscale("log", base=2)
        ticks = sorted(sizes)[:: max(1, len(sizes) // 8)]
        ax.set_xticks(ticks, [size_label(s) for s in ticks])
        ax.set_title(f"allreduce float sum, {np_} processes")
        ax.set_xlabel("size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")  # the curves rise to the right
    axes[0][0].set_ylabel("busbw (GB/s), out-of-place")
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"plot-perf.py: wrote {args.out}")


if __name__ == "__main__":
    main()
