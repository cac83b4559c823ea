#!/usr/bin/env python3
"""The house's layers: which folder may include which (docs/architecture.md, "Layers").

Each room (a folder of the library, or a tool) sits on a layer; a room's files may include the
files of their own room and of the rooms on lower layers. An include of a room on the same or a
higher layer "runs up": it is an error unless it is one of the few listed in EXCEPTIONS, each with
the reason it stays. A room listed in FLAT may also include the rooms beside it on its own layer.

    python3 tests/lint/check_layers.py            # check (make test runs it)
    python3 tests/lint/check_layers.py --draw     # the rooms, their layers and the imports between them
    python3 tests/lint/check_layers.py --self-test  # a planted upward include must fail the check
"""
import collections
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Lowest first. A room is a folder (every file below it that no deeper room claims).
LAYERS = [
    ["include"],                                         # the public API: nccl.h, baton/*.h
    ["algorithms"],                                      # device-portable code: no host header
    ["src/misc"],                                        # logging, parameters (and NCCL's env plugin), sockets, the trace, plugin libraries
    ["src/bootstrap", "transports", "src/cuda"],         # rendezvous; FIFOs' memory; the nvcc plugin
    ["src/topo", "src/tuner", "src/cpu_kernels"],        # topology and the cache probe; cost model; kernels
    ["src"],                                             # the core: communicator, groups, planner, proxy
    ["src/register", "src/fault", "src/alltoall", "src/gpu", "src/sim", "src/device_api", "src/ras"],  # subsystems
    ["src/fused"],                                       # fused operations (use windows and the device API)
    ["src/moe", "src/lowp"],                             # MoE dispatch/combine, wire-format collectives (use fused scratch and AlltoAll)
    ["src/api"],                                         # the exported entry points, and only there
    ["tools/baton-topo", "tools/bench-reduce", "tools/bench-socket", "tools/tuner-plugin", "tools/net-plugin"],  # read the library's internals, say so
    ["tools/baton-perf", "tools/baton-run", "tools/baton-ras", "tools/profiler-plugin", "examples", "tests",
     "tools/bench-peers"],                               # bench-peers: the peers' programs, baton's through its public API
]

# Rooms whose files may include rooms beside them on the same layer (and why).
FLAT = {
    "src/gpu": {"src/register", "src/alltoall"},  # the GPU communicator serves windows and AlltoAll on device memory
    "src/fault": {"src/register"},                # shrink and abort release the registration state they own
    "src/ras": {"src/fault"},                     # the RAS service asks other processes' ranks over the watchdog's mesh
    "src/alltoall": {"src/register"},             # AlltoAll by stores goes into the peers' windows (lesson 12)
    "src/device_api": {"src/register"},           # a device communicator's pads are a window of ncclMemAlloc memory
    "tests": {"tools/baton-perf", "tools/baton-run", "examples"},
}

# Tools that the user runs are built against public headers only (include/).
PUBLIC_ONLY = {"tools/baton-perf", "tools/baton-run", "tools/baton-ras", "examples"}

# Includes that run up, each with why it stays (at most 5: see docs/architecture.md).
EXCEPTIONS = {
    ("src/init.cc", "src/fault/watchdog.h"):
        "init starts the failure detector of a communicator whose ranks span processes (lesson 10)",
    ("src/init.cc", "src/gpu/gpu_comm.h"):
        "init makes the GPU communicator when every rank drives a device",
    ("src/enqueue.cc", "src/gpu/gpu_comm.h"):
        "the planner hands a collective on device buffers to the GPU communicator",
    ("src/enqueue.cc", "src/register/symmetric_plan.h"):
        "the planner asks whether buffers in symmetric windows take a symmetric kernel (lesson 09)",
    ("transports/net/net_transport.h", "src/proxy.h"):
        "a NET connection registers its task with the communicator's proxy thread (lesson 08)",
}
MAX_EXCEPTIONS = 5

SCANNED = ["include", "algorithms", "src", "transports", "tools", "examples", "tests"]
EXTS = (".h", ".cc", ".c", ".cu", ".cuh")
INCLUDE_DIRS = ["include", "src", "algorithms", "transports"]


def rooms():
    out = {}
    for level, names in enumerate(LAYERS):
        for name in names:
            out[name] = level
    return out


ROOMS = rooms()


def room_of(path):
    """The deepest room that holds `path`, or None."""
    best = None
    for name in ROOMS:
        if path == name or path.startswith(name + "/"):
            if best is None or len(name) > len(best):
                best = name
    return best


def sources(root):
    found = []
    for top in SCANNED:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(EXTS):
                    found.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(found)


def resolve(root, path, name, known):
    """The repository file an #include "name" in `path` finds, as the compilers' -I flags order it."""
    here = os.path.dirname(path)
    room = room_of(path) or ""
    for base in [here] + INCLUDE_DIRS + [room, os.path.join("tools", room.split("/")[-1])]:
        cand = os.path.normpath(os.path.join(base, name))
        if cand in known:
            return cand
    return None


def includes(root, files):
    known = set(files)
    for path in files:
        with open(os.path.join(root, path), errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1), known)
                if target:
                    yield path, lineno, target


def allowed(src_room, dst_room):
    if src_room == dst_room:
        return True
    if src_room in PUBLIC_ONLY:
        return dst_room == "include"
    if dst_room in FLAT.get(src_room, ()):
        return True
    return ROOMS[dst_room] < ROOMS[src_room]


def check(root, draw=False):
    files = sources(root)
    errors, used = [], set()
    edges = collections.Counter()
    for path, lineno, target in includes(root, files):
        a, b = room_of(path), room_of(target)
        if a is None or b is None:
            errors.append(f"{path}: not in any room of tests/lint/check_layers.py's LAYERS")
            continue
        if a != b:
            edges[(a, b)] += 1
        if allowed(a, b):
            continue
        if (path, target) in EXCEPTIONS:
            used.add((path, target))
            continue
        errors.append(f"{path}:{lineno}: includes {target}: {a} (layer {ROOMS[a]}) may not include {b} (layer {ROOMS[b]})")
    for stale in sorted(set(EXCEPTIONS) - used):
        errors.append(f"EXCEPTIONS lists {stale[0]} -> {stale[1]}, which no longer runs up: remove it")
    # docs/architecture.md's Layers table names every exception, so the drawing readers see is this one.
    arch = os.path.join(root, "docs", "architecture.md")
    if os.path.exists(arch):
        text = open(arch).read()
        for src, dst in sorted(EXCEPTIONS):
            if f"| `{src}` | `{dst}` |" not in text:
                errors.append(f"docs/architecture.md's Layers table does not list {src} -> {dst}")
    if len(EXCEPTIONS) > MAX_EXCEPTIONS:
        errors.append(f"{len(EXCEPTIONS)} upward includes allowed, more than {MAX_EXCEPTIONS}")
    if draw:
        for level, names in enumerate(LAYERS):
            print(f"layer {level}: " + ", ".join(names))
        print("imports between rooms (files that include):")
        for (a, b), n in sorted(edges.items(), key=lambda e: (ROOMS[e[0][0]], e[0])):
            up = "" if allowed(a, b) else "   <- runs up (EXCEPTIONS)"
            print(f"  {a} -> {b}: {n}{up}")
    return errors


def self_test():
    """Plant an upward include in a copy of the tree's file list and expect the check to fail."""
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp()
    try:
        for top in SCANNED:
            src = os.path.join(ROOT, top)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(tmp, top),
                                ignore=lambda d, names: [n for n in names if os.path.isfile(os.path.join(d, n))
                                                         and not n.endswith(EXTS)])
        clean = check(tmp)
        if clean:
            print("FAIL: self-test: the copied tree should pass:\n  " + "\n  ".join(clean))
            return 1
        planted = os.path.join(tmp, "src", "misc", "debug.cc")
        with open(planted, "a") as f:
            f.write('\n#include "comm.h"\n')
        errors = check(tmp)
        if not any("src/misc/debug.cc" in e and "src/comm.h" in e for e in errors):
            print("FAIL: self-test: a planted include of src/comm.h in src/misc/debug.cc was not reported")
            return 1
        print("PASS: self-test: a planted upward include (src/misc -> src) fails the check")
        return 0
    finally:
        shutil.rmtree(tmp)


def main(argv):
    if "--self-test" in argv:
        return self_test()
    errors = check(ROOT, draw="--draw" in argv)
    if errors:
        print("FAIL: includes that run up the layers (tests/lint/check_layers.py):")
        for e in errors:
            print("  " + e)
        return 1
    print(f"PASS: every include runs down the layers, but for {len(EXCEPTIONS)} listed upward includes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
