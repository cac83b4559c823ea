#!/usr/bin/env python3
"""Fails when a network address outside this machine appears where baton's tests, tools, examples or
docs could dial it.

The rule (docs/testing.md): traffic from tests, tools, examples and lesson commands goes only to the
loopback range (127.0.0.0/8, ::1) or to the namespaced test hosts a test makes itself
(tests/net/netns.sh: 10.77.0.0/24 and fd77::/64). Anything else -- a public address, a private one,
a documentation range (RFC 5737, RFC 3849) or a host name handed to a variable that names a peer --
is reported with its file and line. A string that is only parsed, never dialled, is listed in
tests/lint/addresses.allow with the reason.

  check_addresses.py [ROOT]       scan ROOT (default: the repository) and exit 1 on a finding
  check_addresses.py --self-test  plant an outside address in a scratch tree: the scan must fail
                                  on it and pass without it
"""
import ipaddress
import os
import re
import sys
import tempfile

SCANNED = ["tests", "tools", "examples", "docs", "src", "transports", "include", "algorithms", "README.md", "Makefile"]
TEXT_SUFFIXES = (".cc", ".h", ".c", ".cu", ".sh", ".py", ".md", ".allow", ".map", ".xml", ".txt", ".json")
ALLOWED_NETS = [ipaddress.ip_network(n) for n in ("127.0.0.0/8", "::1/128", "10.77.0.0/24", "fd77::/64")]
# Addresses that never name a destination: the unspecified address (bind to every interface).
NEVER_DIALLED = {ipaddress.ip_address("0.0.0.0"), ipaddress.ip_address("::")}
ALLOW_FILE = "tests/lint/addresses.allow"

IPV4 = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d{1,3}){3})(?![\w.]*\d)")
# An IPv6 literal: hex groups with a '::' or eight groups, not part of a C++ scope ('std::x').
IPV6 = re.compile(r"(?<![\w:])((?:[0-9A-Fa-f]{1,4}:){1,7}:?(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?|::[0-9A-Fa-f]{1,4})(?![\w:])")
# Variables whose value is a peer to dial: their value must be an allowed address or a shell/format
# expansion, never a host name.
PEER_VARS = re.compile(r"\b(NCCL_COMM_ID|BATON_RUN_HOST|BATON_TEST_UNREACHABLE|MASTER_ADDR)=([^\s'\"`;)]+)")
# mpirun's and srun's host lists: every host in them is dialled.
HOST_FLAG = re.compile(r"(?:--host|--hostfile|-H)[ =]([^\s'\"`;)]+)")
# Commands that fetch from elsewhere, in scripts and command lines.
FETCHERS = re.compile(r"(?:^|[\s;|&(])(curl|wget|git clone|ping)\s+\S*(?:https?://|\b[a-z0-9-]+\.[a-z]{2,}\b)")


def load_allow(root):
    """Lines 'PATH LITERAL  # why' (LITERAL is the rest up to the '#'): LITERAL in PATH is fine."""
    allow = set()
    path = os.path.join(root, ALLOW_FILE)
    if not os.path.exists(path):
        return allow
    with open(path) as f:
        for n, line in enumerate(f, 1):
            body = line.split("#", 1)[0].strip()
            if not body:
                continue
            if "#" not in line:
                sys.exit(f"{ALLOW_FILE}:{n}: an allowed entry needs a '# reason' (why it is never dialled)")
            parts = body.split(None, 1)
            if len(parts) != 2:
                sys.exit(f"{ALLOW_FILE}:{n}: expected 'PATH LITERAL  # reason', got {body!r}")
            allow.add((parts[0], parts[1].strip()))
    return allow


def files_under(root):
    for top in SCANNED:
        p = os.path.join(root, top)
        if os.path.isfile(p):
            yield top
        for d, dirs, files in os.walk(p):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for name in files:
                if name.endswith(TEXT_SUFFIXES) or name == "Makefile":
                    yield os.path.relpath(os.path.join(d, name), root)


def outside(literal):
    """The address in `literal` if it is one and lies outside the allowed networks, else None."""
    text = literal.strip("[]")
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if addr in NEVER_DIALLED or any(addr in net for net in ALLOWED_NETS):
        return None
    return addr


def peer_value_ok(value):
    value = value.rstrip(",.")
    if value.startswith(("$", "<", "...")) or "%" in value or value in ("", "host:port") or re.fullmatch(r"[A-Z_]+(:\w+)?", value):
        return True  # an expansion or a placeholder in prose: checked where it is set
    host = value
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host.startswith("$") or host == "":
        return True
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name: it could resolve anywhere
    return outside(host) is None


def scan(root):
    allow = load_allow(root)
    findings = []
    for rel in sorted(set(files_under(root))):
        if rel == ALLOW_FILE or rel == "tests/lint/check_addresses.py":
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            hits = []
            for m in IPV4.finditer(line):
                if outside(m.group(1)) is not None:
                    hits.append(m.group(1))
            for m in IPV6.finditer(line):
                lit = m.group(1)
                if ":" in lit and re.search(r"\d", lit) and outside(lit) is not None:
                    hits.append(lit)
            for m in PEER_VARS.finditer(line):
                if not peer_value_ok(m.group(2)):
                    hits.append(f"{m.group(1)}={m.group(2)}")
            for m in HOST_FLAG.finditer(line):
                for host in m.group(1).split(","):
                    if not peer_value_ok(re.sub(r":\d+$", "", host)):
                        hits.append(f"--host {m.group(1)}")
                        break
            for m in FETCHERS.finditer(line):
                hits.append(m.group(0).strip())
            for h in hits:
                if (rel, h) not in allow:
                    findings.append(f"{rel}:{n}: {h!r} is outside 127.0.0.0/8, ::1 and the test hosts' subnets")
    return findings


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "tests"))
        planted = os.path.join(d, "tests", "planted.sh")
        with open(planted, "w") as f:
            f.write("NCCL_COMM_ID=127.0.0.1:4000 ok\nBATON_TEST_UNREACHABLE=10.77.0.99:9 ok\n")
        if scan(d):
            print("self-test: FAIL: clean tree reported", scan(d))
            return 1
        bad = ["ping 192.0.2.1", "x = \"203.0.113.7:9\";", "NCCL_COMM_ID=node1.example.com:4000",
               "connect [2001:db8::1]:80", "curl https://example.com/x", "BATON_RUN_HOST=10.1.2.3",
               "mpirun --host 127.0.0.1:1,node2:1 -np 2 a.out"]
        for b in bad:
            with open(planted, "w") as f:
                f.write(b + "\n")
            if not scan(d):
                print(f"self-test: FAIL: planted {b!r} was not reported")
                return 1
        print(f"self-test: ok ({len(bad)} planted outside destinations reported, the clean tree passes)")
        return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    findings = scan(root)
    for f in findings:
        print(f)
    if findings:
        print(f"{len(findings)} destination(s) outside this machine; fix them, or list a string that is only "
              f"parsed in {ALLOW_FILE} with the reason")
        return 1
    print("no destination outside 127.0.0.0/8, ::1, 10.77.0.0/24 and fd77::/64")
    return 0


if __name__ == "__main__":
    sys.exit(main())
