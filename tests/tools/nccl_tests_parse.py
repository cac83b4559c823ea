#!/usr/bin/env python3
"""Reads nccl-tests output the way sweep-analysis scripts do, and checks it.

  nccl_tests_parse.py text FILE [--rows N] [--columns C] [--program NAME]
  nccl_tests_parse.py json FILE [--text TEXTFILE] [--nranks N] [--per-iter ITERS] [--time-key KEY]

text: data rows are the lines that do not start with '#', split on whitespace: size, count, type,
redop, root, then time, algbw, busbw, #wrong out of place and again in place (more columns with -I
or -S); "# Avg bus bandwidth : X" is the summary. Every row must parse and have no wrong element.
json: the keys nccl-tests 2.19 writes (-J), and with --text the same rows as the text output.
Prints one line of what it read; exits 1 with the reason on the first mismatch.
"""
import argparse
import json
import re
import sys


def die(msg):
    print(msg)
    sys.exit(1)


def text_rows(path, columns):
    rows, avg, lines = [], None, open(path).read().splitlines()
    for line in lines:
        m = re.match(r"#\s*Avg bus bandwidth\s*:\s*(\S+)", line)
        if m:
            avg = float(m.group(1))
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split()
        if len(f) != columns:
            die(f"{path}: a row of {len(f)} columns, want {columns}: {line!r}")
        try:
            row = {"size": int(f[0]), "count": int(f[1]), "type": f[2], "redop": f[3], "root": int(f[4])}
            per = (columns - 5) // 2 if columns in (13, 21) else 4
            for half, base in (("oop", 5), ("ip", 5 + per)):
                row[half] = {"time": float(f[base]), "algbw": float(f[base + 1]), "busbw": float(f[base + 2]),
                             "wrong": None if f[base + 3] == "N/A" else float(f[base + 3])}
                if row[half]["wrong"]:
                    die(f"{path}: {row[half]['wrong']:g} wrong elements in: {line!r}")
        except ValueError as e:
            die(f"{path}: cannot read the row {line!r}: {e}")
        rows.append(row)
    if avg is None:
        die(f"{path}: no '# Avg bus bandwidth' line")
    if not any(re.match(r"#\s*Out of bounds values\s*:\s*0 OK", l) for l in lines):
        die(f"{path}: no '# Out of bounds values : 0 OK' line")
    return rows, avg, lines


def check_text(a):
    rows, avg, lines = text_rows(a.file, a.columns)
    if a.rows is not None and len(rows) != a.rows:
        die(f"{a.file}: {len(rows)} rows, want {a.rows}")
    if a.program and f"# Collective test starting: {a.program}" not in lines:
        die(f"{a.file}: no '# Collective test starting: {a.program}' line")
    peak = max(rows, key=lambda r: r["oop"]["busbw"]) if rows else None
    print(f"{len(rows)} rows, avg busbw {avg:g} GB/s" +
          (f", peak {peak['oop']['busbw']:g} GB/s at {peak['size']} B" if peak else ""))


CONFIG_KEYS = ["nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "warmup_iters", "iterations",
               "aggregated_iterations", "validation", "graph", "blocking_collectives", "per_iter_timing",
               "per_iter_skip", "parallel_init", "devices"]
RESULT_KEYS = ["size", "count", "type", "redop", "root", "out_of_place", "in_place", "actual_iterations",
               "experiment_name"]


def check_json(a):
    try:
        d = json.load(open(a.file))
    except ValueError as e:
        die(f"{a.file}: not JSON: {e}")
    want = ["version", "start_time", "args", "env", "nccl_version", "config", "results", "out_of_bounds",
            "average_bus_bandwidth", "errors", "end_time"]
    if [k for k in d if k in want] != want:
        die(f"{a.file}: top-level keys {list(d)}, want {want} in that order")
    if d["version"] != 3:
        die(f"{a.file}: version {d['version']}, want 3")
    missing = [k for k in CONFIG_KEYS if k not in d["config"]]
    if missing or ("step_factor" not in d["config"] and "step_bytes" not in d["config"]):
        die(f"{a.file}: config lacks {missing or 'step_factor/step_bytes'}")
    if a.nranks is not None and len(d["config"]["devices"]) != a.nranks:
        die(f"{a.file}: {len(d['config']['devices'])} devices, want {a.nranks}")
    for r in d["results"]:
        if [k for k in r if k in RESULT_KEYS] != RESULT_KEYS:
            die(f"{a.file}: a result with keys {list(r)}")
        for half in ("out_of_place", "in_place"):
            h = r[half]
            if a.time_key not in h or not all(k in h for k in ("alg_bw", "bus_bw", "nwrong")):
                die(f"{a.file}: {half} has {list(h)}")
            if h["nwrong"]:
                die(f"{a.file}: {h['nwrong']} wrong elements at size {r['size']}")
            if a.per_iter is not None:
                it = r.get(half + "_per_iter")
                if not it or len(it["times_us"]) != a.per_iter or not it["min_us"] <= it["p99_us"] <= it["max_us"]:
                    die(f"{a.file}: {half}_per_iter is {it}")
    if d["out_of_bounds"] != {"count": 0, "okay": "true"}:
        die(f"{a.file}: out_of_bounds {d['out_of_bounds']}")
    if a.text:
        rows, avg, _ = text_rows(a.text, 13)
        if len(rows) != len(d["results"]):
            die(f"{a.file}: {len(d['results'])} results, the text has {len(rows)} rows")
        for t, j in zip(rows, d["results"]):
            if (t["size"], t["count"], t["type"], t["redop"]) != (j["size"], j["count"], j["type"], j["redop"]):
                die(f"{a.file}: result {j} is not the row {t}")
            if abs(t["oop"]["busbw"] - j["out_of_place"]["bus_bw"]) > 0.0051 + 0.001 * t["oop"]["busbw"]:
                die(f"{a.file}: busbw {j['out_of_place']['bus_bw']} vs the text's {t['oop']['busbw']}")
        if abs(avg - d["average_bus_bandwidth"]["bandwidth"]) > 1e-3 * max(1.0, avg):
            die(f"{a.file}: average bus bandwidth {d['average_bus_bandwidth']} vs the text's {avg}")
    print(f"{len(d['results'])} results, nccl_version {d['nccl_version']}, "
          f"avg busbw {d['average_bus_bandwidth']['bandwidth']:g}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["text", "json"])
    p.add_argument("file")
    p.add_argument("--rows", type=int)
    p.add_argument("--columns", type=int, default=13)
    p.add_argument("--program")
    p.add_argument("--text")
    p.add_argument("--nranks", type=int)
    p.add_argument("--per-iter", type=int)
    p.add_argument("--time-key", default="time")
    a = p.parse_args()
    check_text(a) if a.mode == "text" else check_json(a)


if __name__ == "__main__":
    main()
