#!/usr/bin/env python3
"""Checks the event trees the test profiler plugin (tests/plugins/profiler_tree.c) wrote.

Reads every file of DIR (one per communicator and rank, named <comm>.<rank>.<pid>; event ids are
the process's, as a parent may be in another communicator's file: a thread's GroupApi goes to the
first communicator it calls, as in NCCL) and checks NCCL's event tree:
  - every event was stopped, at or after its start;
  - parents: CollApi, P2pApi and KernelLaunch under a GroupApi; Coll under its CollApi and P2p
    under its P2pApi (v5; --v4: under the Group), with coll.parentGroup / p2p.parentGroup a Group;
    KernelCh under a Coll or P2p;
  - times: children inside their parents (KernelCh in its Coll or P2p, that in its Group, API
    events in their GroupApi, and the KernelCh's own timer pair in order);
  - a Coll has one KernelCh per channel (one for the algorithms that run as one part);
  - ProxyOp under a Coll, ProxyStep under a ProxyOp, each inside its parent; a step moved bytes
    (transSize > 0) and the steps of one ProxyOp are numbered 0, 1, 2, ...; ProxyCtrl without a
    parent, each holding one of NCCL's state sets (Idle, Active, Sleep+Wakeup, Append+AppendEnd with
    a count), with --net Append, Idle and Active among them; with --net, every Ring Coll has a send
    and a receive ProxyOp per channel, with steps, and across the files each collective's steps
    sent equal the steps received;
  - the states: GroupApi recorded GroupStartApiStop and GroupEndApiStart, KernelCh KernelChStop;
  - seqNumber counts each rank's collectives of one kind 0, 1, 2, ...
--expect TYPE=N (repeatable) asks for N events of TYPE on every rank; --only TYPE,... says no other
type may appear. Prints one summary line; exits 1 with the first problems otherwise.
  usage: profiler_tree_check.py DIR [--v4] [--expect Coll=3] [--only Coll]
"""
import argparse
import collections
import os
import sys

STATE_KERNEL_CH_STOP = 22
STATE_GROUP_START_API_STOP = 23
STATE_GROUP_END_API_START = 24
STATE_SEND_WAIT = 9
STATE_RECV_WAIT = 10
# ProxyCtrl: each event holds one of these state sets (NCCL's proxy thread records the same)
CTRL_IDLE, CTRL_ACTIVE, CTRL_SLEEP, CTRL_WAKEUP, CTRL_APPEND, CTRL_APPEND_END = 13, 14, 15, 16, 17, 18
CTRL_SETS = {1 << CTRL_IDLE: "Idle", 1 << CTRL_ACTIVE: "Active", (1 << CTRL_SLEEP) | (1 << CTRL_WAKEUP): "Sleep",
             (1 << CTRL_APPEND) | (1 << CTRL_APPEND_END): "Append"}
ONE_PART_ALGOS = {"OneShot", "Naive"}


def read(path):
    events = {}
    with open(path) as f:
        for line in f:
            e = dict(kv.split("=", 1) for kv in line.split())
            for k in ("id", "parent", "group", "rank", "start", "stop", "states", "nch", "ch", "seq", "count",
                      "peer", "send", "pstart", "pstop"):
                e[k] = int(e[k])
            events[e["id"]] = e
    return events


def check_file(name, ev, everyone, v4, net, problems, flow):
    """ev: this file's events; everyone: all events of its process, by id (parents may be there)."""
    def bad(e, what):
        problems.append(f"{name}: event {e['id']} ({e['type']}): {what}")

    present = types_present(everyone)

    def parent_is(e, key, types):
        if e[key] == 0 and not present & set(types):
            return None  # the plugin's mask leaves the parent's type out: NULL, as in NCCL
        p = everyone.get(e[key])
        if p is None or p["type"] not in types:
            bad(e, f"{key} {e[key]} is not a {'/'.join(types)}")
            return None
        return p

    def inside(e, p):
        if not (p["start"] <= e["start"] and e["stop"] <= p["stop"]):
            bad(e, f"[{e['start']}, {e['stop']}] is not inside its {p['type']} {p['id']} [{p['start']}, {p['stop']}]")

    channels = collections.Counter()
    proxyOps = collections.defaultdict(list)
    proxySteps = collections.defaultdict(list)
    seqs = collections.defaultdict(list)
    for e in ev.values():
        if e["stop"] == 0 or e["stop"] < e["start"]:
            bad(e, "never stopped, or stopped before it started")
            continue
        t = e["type"]
        if t in ("CollApi", "P2pApi", "KernelLaunch"):
            p = parent_is(e, "parent", ["GroupApi"])
            if p:
                inside(e, p)
        elif t == "GroupApi":
            want = (1 << STATE_GROUP_START_API_STOP) | (1 << STATE_GROUP_END_API_START)
            if e["states"] & want != want:
                bad(e, f"states {e['states']:#x} lack GroupStartApiStop and GroupEndApiStart")
        elif t in ("Coll", "P2p"):
            api = "CollApi" if t == "Coll" else "P2pApi"
            if v4:
                p = parent_is(e, "parent", ["Group"])
            else:
                parent_is(e, "parent", [api, "P2pApi"] if t == "Coll" and e["func"] == "AllToAll" else [api])
                p = parent_is(e, "group", ["Group"])
            if p:
                inside(e, p)
            if t == "Coll":
                seqs[e["func"]].append(e["seq"])
        elif t == "KernelCh":
            p = parent_is(e, "parent", ["Coll", "P2p"])
            if p:
                inside(e, p)
                channels[p["id"]] += 1
            if not e["states"] & (1 << STATE_KERNEL_CH_STOP):
                bad(e, "no KernelChStop state")
            if not (0 < e["pstart"] <= e["pstop"]):
                bad(e, f"timer pair {e['pstart']} .. {e['pstop']} out of order")
        elif t == "ProxyOp":
            p = parent_is(e, "parent", ["Coll"])
            if p:
                inside(e, p)
                proxyOps[p["id"]].append(e)
        elif t == "NetPlugin":
            p = parent_is(e, "parent", ["ProxyStep"])
            if p:
                inside(e, p)
            if e["seq"] != 1 or e["count"] <= 0:
                bad(e, "a network plugin event without the socket plugin's id or a length")
        elif t == "ProxyStep":
            p = parent_is(e, "parent", ["ProxyOp"])
            if p:
                inside(e, p)
                proxySteps[p["id"]].append(e["seq"])
            if e["count"] <= 0:
                bad(e, "transSize 0")
            if not e["states"] & ((1 << STATE_SEND_WAIT) | (1 << STATE_RECV_WAIT)):
                bad(e, f"states {e['states']:#x} lack SendWait / RecvWait")
    ctrl = collections.Counter()
    for e in ev.values():
        if e["type"] != "ProxyCtrl":
            continue
        if e["parent"]:
            bad(e, "a ProxyCtrl with a parent")
        kind = CTRL_SETS.get(e["states"])
        if not kind:
            bad(e, f"ProxyCtrl states {e['states']:#x} are none of Idle, Active, Sleep+Wakeup, Append+AppendEnd")
        elif kind == "Append" and e["count"] <= 0:
            bad(e, "an Append that appended nothing")
        if e["stop"] < e["start"]:
            bad(e, "stops before it starts")
        ctrl[kind] += 1
    if net and not (ctrl["Append"] and ctrl["Idle"] and ctrl["Active"]):
        problems.append(f"{name}: the proxy thread's ProxyCtrl events lack Append, Idle or Active: {dict(ctrl)}")
    for e in ev.values():
        if e["type"] == "Coll" and "KernelCh" in types_present(ev):
            want = 1 if e["algo"] in ONE_PART_ALGOS or e["func"] == "AllToAll" else e["nch"]
            if channels[e["id"]] != want:
                bad(e, f"{channels[e['id']]} KernelCh events for {want} channels ({e['algo']}/{e['proto']})")
    for op, s in proxySteps.items():
        if sorted(s) != list(range(len(s))):
            problems.append(f"{name}: ProxyOp {op}: steps {sorted(s)[:8]}... are not 0, 1, 2, ...")
    if net:
        for e in ev.values():
            if e["type"] == "Coll" and e["algo"] == "Ring" and e["count"] > 0:
                ops = proxyOps[e["id"]]
                kinds = collections.Counter((o["ch"], o["send"]) for o in ops)
                want = collections.Counter({(c, d): 1 for c in range(e["nch"]) for d in (0, 1)})
                if kinds != want:
                    bad(e, f"ProxyOps (channel, isSend) {sorted(kinds.items())}, expected a send and a receive "
                           f"ProxyOp on each of {e['nch']} channels")
                # every rank sends in these; in a Broadcast or Reduce the ring's end sends nothing
                sends = e["func"] in ("AllReduce", "AllGather", "ReduceScatter")
                if sends and ops and not any(proxySteps[o["id"]] for o in ops):
                    bad(e, "no ProxyOp of it has a step")
    for func, s in seqs.items():
        if sorted(s) != list(range(len(s))):
            problems.append(f"{name}: {func} seqNumbers {sorted(s)[:8]}... are not 0, 1, 2, ...")
    # For the job-wide check (main): each collective's steps and bytes sent and received.
    for op, steps in proxyOps.items():
        coll = ev[op]
        for o in steps:
            n = len(proxySteps[o["id"]])
            flow[(coll["func"], coll["seq"], coll["algo"], "send" if o["send"] else "recv")] += n


def types_present(ev):
    return {e["type"] for e in ev.values()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--v4", action="store_true")
    ap.add_argument("--net", action="store_true", help="every connection is NET: Ring Colls have ProxyOps")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--only")
    a = ap.parse_args()
    files = sorted(os.listdir(a.dir))
    if not files:
        print(f"no profile files in {a.dir}")
        return 1
    problems = []
    totals = collections.Counter()
    byFile = {name: read(os.path.join(a.dir, name)) for name in files}
    byPid = collections.defaultdict(dict)
    for name, ev in byFile.items():
        byPid[name.rsplit(".", 1)[-1]].update(ev)
    flow = collections.Counter()
    for name, ev in byFile.items():
        check_file(name, ev, byPid[name.rsplit(".", 1)[-1]], a.v4, a.net, problems, flow)
        counts = collections.Counter(e["type"] for e in ev.values())
        totals.update(counts)
        for x in a.expect:
            t, n = x.split("=")
            if counts[t] != int(n):
                problems.append(f"{name}: {counts[t]} {t} events, expected {n}")
        if a.only:
            extra = set(counts) - set(a.only.split(","))
            if extra:
                problems.append(f"{name}: event types {sorted(extra)} beyond --only {a.only}")
    # Every step one rank's proxy sent for a collective, another's received and gave to the same
    # collective (its ProxyOps on both ends): the job's totals per collective agree. Only where
    # every rank of the job wrote a file here (one communicator's ranks, as in these runs).
    if a.net:
        for (func, seq, algo, d), n in flow.items():
            if d == "send" and flow[(func, seq, algo, "recv")] != n:
                problems.append(f"{func} seq {seq} ({algo}): {n} steps sent, {flow[(func, seq, algo, 'recv')]} received")
    summary = ", ".join(f"{t} {n}" for t, n in sorted(totals.items()))
    if problems:
        print(f"{len(files)} files: {summary}")
        print("\n".join(problems[:20]))
        return 1
    print(f"{len(files)} files: {summary}: every event has its parent, inside it in time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
