#!/usr/bin/python3
"""Draws tools/scripts/bench-net.sh's result: busbw per implementation (median over repeats, each repeat a dot).

    /usr/bin/python3 tools/scripts/plot-net.py     # build/bench/net/net.csv -> docs/figures/net-allreduce-64M.png

Run it with Debian's python3 (python3-matplotlib, installed by tools/install-deps.sh).
"""
import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only: no display on the build machines
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["gloo", "openmpi", "baton"]
LABEL = {"gloo": "Gloo\n(TCP ring)", "openmpi": "OpenMPI\n(TCP BTL)", "baton": "baton\n(NET/Socket)"}
COLOR = {"gloo": "tab:gray", "openmpi": "black", "baton": "tab:blue"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="build/bench/net/net.csv")
    ap.add_argument("--out", default="docs/figures/net-allreduce-64M.png")
    args = ap.parse_args()
    runs, median, size = defaultdict(list), {}, 0
    with open(args.csv) as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok":
                continue
            size = int(row["size_B"])
            if row["repeat"] == "median":
                median[row["impl"]] = float(row["busbw_GBs"])
            else:
                runs[row["impl"]].append(float(row["busbw_GBs"]))
    impls = [i for i in ORDER if i in median]
    fig, ax = plt.subplots(figsize=(6, 4))
    xs = range(len(impls))
    ax.bar(xs, [median[i] for i in impls], color=[COLOR[i] for i in impls], alpha=0.8)
    for x, i in zip(xs, impls):
        ax.scatter([x] * len(runs[i]), runs[i], color="tab:orange", zorder=3, s=12)
        ax.text(x + 0.3, median[i], f"{median[i]:.2f}", ha="left", va="center")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([LABEL[i] for i in impls])
    ax.set_ylabel("busbw (GB/s), median; dots: each repeat")
    ax.set_title(f"allreduce, {size >> 20} MiB float sum\n2 hosts (network namespaces over veth), 1 rank each", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
