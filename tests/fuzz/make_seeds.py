#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from the test fixtures and
from well-formed messages, so a fuzzer starts from inputs every parser accepts.

    python3 tests/fuzz/make_seeds.py     # rewrites tests/fuzz/corpus/
"""
import os
import shutil
import socket
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
FIXTURES = os.path.join(ROOT, "tests", "topo", "fixtures")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def sockaddr_in(port, host="127.0.0.1"):  # SocketAddress: 28 bytes, a sockaddr_in at the front
    return struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + socket.inet_aton(host) + bytes(20)


def sockaddr_in6(port):
    return struct.pack("<H", socket.AF_INET6) + struct.pack(">H", port) + bytes(4) + socket.inet_pton(
        socket.AF_INET6, "::1") + bytes(4)


def fixtures():
    for f in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, f), "rb") as fh:
            yield f[:-4], fh.read()


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    for name, xml in fixtures():
        put("topo_xml", name + "-1host", b"\x00" + xml)
        put("topo_xml", name + "-2hosts", b"\x01" + xml)
        # sim_input: mode 0 (the planner) on each fixture; mode 1 (hand-made schedule) on one.
        put("sim_input", name + "-allreduce-ring", b"\x00" + bytes([0, 1, 1, 8, 0, 0, 0, 0, 16, 8, 0, 6, 1, 8, 0, 0]) + xml)
        put("sim_input", name + "-allreduce-tree-LL", b"\x00" + bytes([0, 2, 1, 8, 1, 0, 1, 1, 64, 4, 0, 4, 2, 8, 1, 0]) + xml)
        put("sim_input", name + "-allgather", b"\x00" + bytes([1, 1, 0, 4, 2, 3, 0, 2, 32, 10, 1, 8, 4, 4, 0, 0]) + xml)
    put("sim_input", "laptop-handmade", b"\x01" + bytes([0, 1, 1, 8, 3, 2, 0, 1, 8, 1, 0, 8, 0, 0, 0, 0]) +
        dict(fixtures())["laptop"])

    tuning = ("# path algorithm protocol base_us hop_us busbw_GBs\n"
              "shm Ring LL 0.00 1.52 1.85\nshm Ring LL128 0.50 2.00 3.10\nshm Ring Simple 1.00 4.20 6.50\n"
              "direct Tree Simple 2.0 3.0 9.0\n"
              "shm Ring LL corr " + " ".join(["1.02"] * 23) + "\n")
    put("tuning_file", "calibrated", tuning)
    put("tuning_file", "one-entry", "oversub Ring Simple 3 4 5  # a comment\n")
    put("tuning_file", "bad-path", "nvlink Ring Simple 3 4 5\n")

    put("env_syntax", "algo-proto", b"\x00^LL128;allreduce:LL128\x00Ring,Tree")
    put("env_syntax", "algo-sections", b"\x00allreduce:tree;broadcast:ring\x00^Simple;allgather:Simple")
    put("env_syntax", "size-suffix", b"\x014M")
    put("env_syntax", "size-hex", b"\x010x10")
    put("env_syntax", "seconds", b"\x012.5")
    put("env_syntax", "ifname-exclude", b"\x02^docker,virbr")
    put("env_syntax", "ifname-exact", b"\x02=lo")
    put("env_syntax", "address-v4", b"\x03127.0.0.1:29500")
    put("env_syntax", "address-v6", b"\x03[::1]:29500")
    put("env_syntax", "ib-hca", b"\x04=mlx5_0:1,mlx5_1\x00mlx5_0\x01")
    put("env_syntax", "ib-hca-exclude", b"\x04^mlx5_2\x00mlx5_1\x01")

    def launch(*pairs):
        vars_ = ["BATON_RANK", "BATON_NRANKS", "BATON_LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK",
                 "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID", "NCCL_COMM_ID"]
        return b"".join(bytes([vars_.index(k)]) + v.encode() + b"\x00" for k, v in pairs)

    put("launch_env", "baton-run", launch(("BATON_RANK", "1"), ("BATON_NRANKS", "4"), ("BATON_LOCAL_RANK", "1"),
                                          ("NCCL_COMM_ID", "127.0.0.1:29500")))
    put("launch_env", "openmpi", launch(("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "8"),
                                        ("OMPI_COMM_WORLD_LOCAL_RANK", "3")))
    put("launch_env", "slurm", launch(("SLURM_STEP_NUM_TASKS", "2"), ("SLURM_PROCID", "0"), ("SLURM_LOCALID", "0")))
    put("launch_env", "pmi-bad", launch(("PMI_RANK", "5"), ("PMI_SIZE", "2")))

    def checkin(rank, nranks, port):
        return struct.pack("<I", 36) + struct.pack("<ii", rank, nranks) + sockaddr_in(port)

    put("bootstrap_msg", "root-two-ranks", b"\x00" + checkin(1, 2, 4001) + checkin(0, 2, 4000))
    put("bootstrap_msg", "root-mismatch", b"\x00" + checkin(0, 2, 4000) + checkin(1, 3, 4001))
    put("bootstrap_msg", "root-duplicate", b"\x00" + checkin(0, 2, 4000) + checkin(0, 2, 4002))
    put("bootstrap_msg", "root-stranger", b"\x00" + b"GET / HTTP/1.1\r\n\r\n" + checkin(0, 1, 4000))
    reply = struct.pack("<i", 0) + bytes(252)
    put("bootstrap_msg", "rank-reply", b"\x01" + reply + b"\x01" + sockaddr_in(4000) + sockaddr_in6(4001))
    put("bootstrap_msg", "rank-reply-failed", b"\x01" + struct.pack("<i", 5) + b"duplicate rank 0".ljust(252, b"\x00"))
    put("bootstrap_msg", "peer-header", b"\x02" + struct.pack("<iIQQ", 1, 0, 1 << 20, 4096) + b"\x03")
    put("bootstrap_msg", "unique-id", b"\x03" + struct.pack("<Q", 0x1234567890abcdef) + sockaddr_in(29500) + bytes(92))

    def frame(type_, round_, key, words):
        return struct.pack("<IIQII", type_, round_, key, len(words), 0) + b"".join(struct.pack("<Q", w) for w in words)

    fail1 = (1 << 56) + 1
    # n = 4 (byte 2 -> 2 + 2), this rank 0; events: (kind 0, peer p, length, bytes).
    def chunk(peer, data):
        return bytes([0, peer, len(data)]) + data

    put("watchdog_msg", "round-and-decide", bytes([2, 0]) + chunk(1, frame(1, 0, fail1, [0b1000])) +
        chunk(2, frame(1, 0, fail1, [0b1000])) + bytes([1, 3]) + bytes([3, 0, 1, 3, 0]) +
        chunk(1, frame(2, 1, fail1, [0b1000])))
    put("watchdog_msg", "heartbeat-bye-split", bytes([2, 1]) + chunk(2, frame(10, 0, 0, [])[:10]) +
        chunk(2, frame(10, 0, 0, [])[10:] + frame(11, 0, 0, [])))
    put("watchdog_msg", "vote", bytes([2, 2]) + bytes([3, 0, 0, 2]) + chunk(0, frame(1, 0, (2 << 56) + 1, [0])) +
        chunk(1, frame(1, 0, (2 << 56) + 1, [1 << 4])))

    def net(flags, bufs, control, data=()):
        out = bytes([flags, len(bufs) - 1])
        for size_byte, shift, tag in bufs:
            out += bytes([size_byte, shift, tag])
        out += struct.pack("<H", len(control)) + control
        for d in data:
            out += struct.pack("<H", len(d)) + d
        return out

    payload = bytes(range(256)) * 4
    put("net_frame", "one-message", net(0, [(16, 6, 0x21)], struct.pack("<QQ", 0x21, len(payload)) + payload))
    put("net_frame", "two-candidates", net(0, [(1, 8, 0x10), (4, 8, 0x22)], struct.pack("<QQ", 0x522, 300) + bytes(300)))
    put("net_frame", "empty-message", net(0, [(0, 0, 7)], struct.pack("<QQ", 7, 0)))
    put("net_frame", "oversized", net(0, [(1, 4, 1)], struct.pack("<QQ", 1, 1 << 40)))
    put("net_frame", "truncated", net(0, [(1, 10, 3)], struct.pack("<QQ", 3, 1000) + bytes(10)))
    put("net_frame", "helper-threads", net(1, [(1, 8, 5)], struct.pack("<QQ", 5, 256) + bytes(256)))


if __name__ == "__main__":
    main()
