#!/usr/bin/env python3
"""Prints one rank's spans of a BATON_TRACE timeline as text, in time order.

    tools/scripts/trace-spans.py TRACE.json [--rank 0] [--cat fused,op] [--last N] [--from-last NAME]

The timeline (src/misc/trace.cc) is Chrome trace JSON, one event per line between "[" and "]",
written by every rank of a job; ui.perfetto.dev draws it. This prints what a reader of lesson 11
wants in a terminal: for the rank asked for, each span's start (ms from the rank's first span
shown), its length, its lane (the channel, or a fused call's compute lane) and its name. --cat keeps
the categories named (default: every one but the FIFO steps, "step", which are thousands);
--last N keeps the last N of them; --from-last NAME starts at the last span of that name (a
sweep's last call: for a fused call, the GEMM of the rank's own rows, "gemm rows of rank R").
"""
import argparse
import json
import sys


def read(path):
    """The file's complete ("X") events and its lane names by (pid, tid), in one pass; a file still
    being written may lack its closing bracket."""
    spans, lanes = [], {}
    with open(path) as f:
        for line in f:
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if e.get("ph") == "X":
                spans.append(e)
            elif e.get("name") == "thread_name":
                lanes[(e.get("pid"), e.get("tid"))] = e.get("args", {}).get("name", "")
    return spans, lanes


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--cat", default="", help="comma-separated categories to keep (default: all but step)")
    ap.add_argument("--last", type=int, default=0, help="only the last N spans kept")
    ap.add_argument("--from-last", default="", help="start at the last span with this name")
    a = ap.parse_args(argv)
    pid = a.rank + 1  # the timeline's process id is rank + 1 (0 holds the job's metadata)
    keep = set(filter(None, a.cat.split(",")))
    spans, lanes = read(a.trace)
    spans = [e for e in spans if e.get("pid") == pid]
    spans = [e for e in spans if (e.get("cat") in keep if keep else e.get("cat") != "step")]
    if not spans:
        print(f"no spans for rank {a.rank} in {a.trace}", file=sys.stderr)
        return 1
    spans.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    if a.from_last:
        starts = [i for i, e in enumerate(spans) if e["name"] == a.from_last]
        if not starts:
            print(f"no span named '{a.from_last}' for rank {a.rank} in {a.trace}", file=sys.stderr)
            return 1
        spans = spans[starts[-1]:]
    if a.last > 0:
        spans = spans[-a.last:]
    t0 = spans[0]["ts"]
    print(f"{'start ms':>9} {'ms':>8}  {'lane':<14} name")
    for e in spans:
        lane = lanes.get((pid, e.get("tid")), str(e.get("tid")))
        print(f"{(e['ts'] - t0) / 1000:9.3f} {e.get('dur', 0) / 1000:8.3f}  {lane:<14} {e['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
