#!/usr/bin/env python3
"""A RAS client written against NCCL's client protocol alone (lesson 14), as a monitoring script
would be: it speaks the lines NCCL 2.28's `ncclras` sends (CLIENT PROTOCOL 2, TIMEOUT, SET FORMAT
json, STATUS), parses the JSON answer with the field names NCCL documents, and prints one digest
line per communicator for tests/fault/ras_check.sh:

    comm=0x... size=8 ranks=8 missing=0 dead= unresponsive= allreduce=min-max secs=0.004

    ras_protocol_client.py HOST PORT [TIMEOUT]        the digest; exit 1 on a protocol error
    ras_protocol_client.py HOST PORT --line 'LINE'    send one line after the handshake, print the answer

and misbehaves for the service's bad-input checks:

    ras_protocol_client.py HOST PORT --silent SECS    connect, send nothing: "closed after S s" or "open"
    ras_protocol_client.py HOST PORT --flood          70000 bytes with no line end: "closed" or "open"
    ras_protocol_client.py HOST PORT --hang-up        send STATUS and close before the answer
"""
import time
import json
import socket
import sys


def read_line(sock):
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise RuntimeError("the service closed the connection mid-line: %r" % data)
        data += chunk
    return data.decode()


def exchange(sock, line, want):
    sock.sendall((line + "\n").encode())
    answer = read_line(sock)
    if not answer.upper().startswith(want):
        raise RuntimeError("%r answered %r, expected %r" % (line, answer, want))
    return answer


def connect(host, port):
    sock = socket.create_connection((host, int(port)), timeout=30)
    answer = exchange(sock, "CLIENT PROTOCOL 2", "SERVER PROTOCOL ")
    if int(answer.split()[2]) != 2:
        print("protocol version differs: %s" % answer.strip(), file=sys.stderr)
    return sock


def main():
    host, port = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3 and sys.argv[3] in ("--silent", "--flood", "--hang-up"):
        sock = socket.create_connection((host, int(port)), timeout=5)
        if sys.argv[3] == "--hang-up":
            sock.sendall(b"STATUS\n")
            sock.close()
            return 0
        limit = float(sys.argv[4]) if sys.argv[3] == "--silent" else 5.0
        if sys.argv[3] == "--flood":
            try:
                sock.sendall(bytes(b for b in range(1, 256) if b != 10) * 280)  # no line end among them
            except OSError:
                pass
        t0 = time.monotonic()
        sock.settimeout(0.1)
        while time.monotonic() - t0 < limit:
            try:
                if not sock.recv(4096):
                    print("closed after %.1f s" % (time.monotonic() - t0))
                    return 0
            except socket.timeout:
                continue
            except OSError:
                print("closed after %.1f s" % (time.monotonic() - t0))
                return 0
        print("open")
        return 0
    if len(sys.argv) > 4 and sys.argv[3] == "--line":
        sock = connect(host, port)
        sock.sendall((sys.argv[4] + "\n").encode())
        print(read_line(sock), end="")
        return 0
    timeout = sys.argv[3] if len(sys.argv) > 3 else "5"
    sock = connect(host, port)
    exchange(sock, "TIMEOUT %s" % timeout, "OK")
    exchange(sock, "SET FORMAT json", "OK")
    sock.sendall(b"STATUS\n")
    raw = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        raw += chunk
    status = json.loads(raw.decode())
    assert status["communicators_count"] == len(status["communicators"]), "communicators_count"
    secs = status["ras"]["collection_time_sec"]
    for c in status["communicators"]:
        assert c["ranks_count"] == len(c["ranks"]) and c["missing_ranks_count"] == len(c["missing_ranks"])
        counts = [r["collective_counts"]["AllReduce"] for r in c["ranks"]]
        dead = [m["rank"] for m in c["missing_ranks"] if m["status"]["considered_dead"]]
        unresponsive = [m["rank"] for m in c["missing_ranks"] if m["status"]["unresponsive"]]
        errors = sorted({r["status"]["async_error"] for r in c["ranks"]})
        print("comm=%s size=%d ranks=%d missing=%d dead=%s unresponsive=%s allreduce=%s errors=%s secs=%.3f" % (
            c["hash"], c["size"], c["ranks_count"], c["missing_ranks_count"], ",".join(map(str, dead)),
            ",".join(map(str, unresponsive)), "%d-%d" % (min(counts), max(counts)) if counts else "-",
            ",".join(map(str, errors)), secs))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, RuntimeError, ValueError, KeyError, AssertionError) as e:
        print("ras_protocol_client: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
