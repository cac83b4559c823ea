#!/usr/bin/python3
"""Lesson 09's figure: busbw against size for plain buffers through the FIFO and by single copies,
registered buffers and windows.

Reads the table of `baton-perf allreduce --compare fifo,plain,registered,window` (any stages work: the
column groups are named by the '#   <name>  <settings>' header lines) and draws one line per stage.

  build/bin/baton-run -n 2 --no-prefix build/bin/baton-perf allreduce -b 8 -e 256M -f 4 \\
      --compare fifo,plain,registered,window > build/bench/registration-sweep.txt
  tools/scripts/plot-registration.py build/bench/registration-sweep.txt docs/figures/registration-busbw.png
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, out):
    stages, rows = [], []
    in_stages = False
    for line in open(src):
        if line.startswith("# --compare:"):
            in_stages = True
            continue
        m = re.match(r"^#   (\S+)\s", line)
        if in_stages and m:
            stages.append(m.group(1))
            continue
        if line.startswith("#") or not line.strip():
            in_stages = in_stages and line.startswith("#   ")
            continue
        f = line.split()
        if len(f) >= 5 + 3 * len(stages) and f[0].isdigit():
            rows.append((int(f[0]), [float(f[5 + 3 * i + 1]) for i in range(len(stages))]))
    if not stages or not rows:
        sys.exit(f"plot-registration.py: no --compare table in {src}")
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = {"fifo": "plain, FIFO (fifo)", "plain": "plain, single copy (-R 0)", "registered": "registered (-R 1)",
              "window": "symmetric window (-R 2)"}
    for i, name in enumerate(stages):
        ax.plot([r[0] for r in rows], [r[1][i] for r in rows], marker="o", label=labels.get(name, name))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("AllReduce, 2 processes: the copies a byte takes")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
