#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hol-ab.py - head-of-line A/B: NAME=SIGILD... builds, each started once,
measured in 6 alternating rounds: a 1-connection signer (1.5 s) while
another connection verifies 32 MiB messages back to back; prints per build
the signer's worst latency (ms), its p99 (us) and the verifier's rate.

Usage: tests/bench/hol-ab.py --loadgen BUILD/tests/bench/sigil-loadgen A=PATH B=PATH...
(PATH may be a wrapper script that sets an environment and execs sigild.)
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

args = sys.argv[1:]
if len(args) < 3 or args[0] != "--loadgen":
    sys.exit(__doc__)
LG = args[1]
bins = dict(a.split("=", 1) for a in args[2:])
tmp = tempfile.mkdtemp(prefix="sigil-hol-")
procs = {}
for n, b in bins.items():
    st = os.path.join(tmp, n)
    os.mkdir(st, 0o700)
    sock = os.path.join(st, "s")
    procs[n] = (subprocess.Popen([b, "--socket", sock, "--ssh-agent-socket", "none", "--state-dir", st,
                                  "--workers", "2", "--foreground", "--ephemeral", "--allow-unlocked-memory"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), sock)
time.sleep(1)


def lg(a, sec):
    out = subprocess.run([LG, "--json", "--seconds", str(sec)] + a, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


try:
    for n, (p, sock) in procs.items():
        lg(["--socket", sock, "--key", "k", "--op", "sign"], 0.2)
    res = {n: [] for n in procs}
    for i in range(6):
        order = list(procs.items()) if i % 2 == 0 else list(procs.items())[::-1]
        for n, (p, sock) in order:
            box = {}
            t = threading.Thread(target=lambda: box.update(v=lg(["--socket", sock, "--key", "k", "--op", "verify",
                                                                 "--msg-size", str(32 << 20)], 3.0)))
            t.start()
            time.sleep(1.0)
            s = lg(["--socket", sock, "--key", "k", "--op", "sign"], 1.5)
            t.join()
            res[n].append((s["max_us"] / 1000, s["p99_us"], box["v"]["requests_per_s"]))
    for n, v in res.items():
        print(n, "worst ms", sorted(round(x[0], 1) for x in v), "p99 us", sorted(round(x[1]) for x in v),
              "verifies/s", sorted(round(x[2], 1) for x in v))
finally:
    for p, s in procs.values():
        p.terminate()
