#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ab.py - sigild variants side by side at one load, in one interleaved run.

Usage: tests/bench/ab.py --build DIR [--rounds R] [--seconds S] [--load CxD]
                         [--op sign|verify|dh|key.public] VARIANT...

A VARIANT is NAME=SIGILD[@CONFIG][#KEY=VALUE]...: a sigild binary, an
optional configuration file (--config), and settings:
  #PIN=LOOP/WORKERS   CPU lists (e.g. 0/1, 0+1/0, -: left alone) the loop
                      thread and the other threads are pinned to, once the
                      daemon is up (sched_setaffinity);
  #RENICE=N           the loop thread's nice value (needs the privilege to
                      lower it);
  #ENV=VALUE          any other KEY: an environment variable of that sigild
                      (a throwaway switch in a test build, say).
Each variant is started once (--ephemeral, its own socket and state
directory, --allow-unlocked-memory) and measured R rounds (default 6) with
DIR's tests/bench/sigil-loadgen at C connections x D in flight (default
32x1) for S seconds (default 2); the order of the variants is reversed
every round. Printed per variant: the median requests/s, sigild's CPU per
request (/proc/PID/stat, every thread), the machine's busy share
(/proc/stat) and p50 latency, then every round's requests/s. For the
noise of a shared 2-vCPU VM compare variants only within one run.
Not a test: it measures and prints.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadgen import TICK, cpu_ticks, fail, machine_ticks, med, need, wait_socket  # noqa: E402


def parse_variant(v):
    if "=" not in v:
        fail("variant %r: NAME=SIGILD[@CONFIG][#KEY=VALUE]..." % v)
    name, rest = v.split("=", 1)
    rest, *settings = rest.split("#")
    binary, _, conf = rest.partition("@")
    opts = {}
    for kv in settings:
        k, sep, val = kv.partition("=")
        if not sep:
            fail("variant %s: setting %r is not KEY=VALUE" % (name, kv))
        opts[k] = val
    return {"name": name, "bin": need(binary, "sigild of " + name), "conf": conf or None, "opts": opts}


def cpus(spec):
    return None if spec == "-" else {int(c) for c in spec.split("+")}


def start(v, tmp):
    d = os.path.join(tmp, v["name"])
    os.makedirs(os.path.join(d, "state"))
    env = dict(os.environ)
    env.update({k: val for k, val in v["opts"].items() if k not in ("PIN", "RENICE")})
    args = [v["bin"], "--socket", os.path.join(d, "s"), "--ssh-agent-socket", "none", "--state-dir",
            os.path.join(d, "state"), "--foreground", "--ephemeral", "--allow-unlocked-memory"]
    if v["conf"]:
        args += ["--config", v["conf"]]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    v["proc"], v["sock"] = p, os.path.join(d, "s")
    wait_socket(v["sock"], p, v["name"])
    if "PIN" in v["opts"]:
        loop_cpus, _, other_cpus = v["opts"]["PIN"].partition("/")
        for t in os.listdir("/proc/%d/task" % p.pid):
            want = cpus(loop_cpus) if int(t) == p.pid else cpus(other_cpus or "-")
            if want:
                os.sched_setaffinity(int(t), want)
    if "RENICE" in v["opts"]:
        os.setpriority(os.PRIO_PROCESS, p.pid, int(v["opts"]["RENICE"]))


def main():
    ap = argparse.ArgumentParser(description="sigild variants side by side, interleaved")
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--load", default="32x1")
    ap.add_argument("--op", default="sign", choices=["sign", "verify", "dh", "key.public"])
    ap.add_argument("variant", nargs="+")
    a = ap.parse_args()
    lg = need(os.path.join(a.build, "tests/bench/sigil-loadgen"), "sigil-loadgen of --build")
    conns, _, depth = a.load.partition("x")
    vs = [parse_variant(v) for v in a.variant]
    if len({v["name"] for v in vs}) != len(vs):
        fail("two variants have the same name")
    key = "lg-x" if a.op == "dh" else "lg-ed"
    tmp = tempfile.mkdtemp(prefix="sigil-ab-")
    try:
        for v in vs:
            start(v, tmp)
            subprocess.run([lg, "--socket", v["sock"], "--key", key, "--op", a.op, "--seconds", "0.2"],
                           check=True, capture_output=True)
            v["rounds"] = []
        for r in range(a.rounds):
            for v in (vs if r % 2 == 0 else vs[::-1]):
                c0, m0 = cpu_ticks(v["proc"].pid), machine_ticks()
                p = subprocess.run([lg, "--json", "--socket", v["sock"], "--key", key, "--op", a.op,
                                    "--connections", conns, "--depth", depth or "1", "--seconds", str(a.seconds)],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    fail("sigil-loadgen on %s: %s" % (v["name"], p.stderr.strip()))
                c1, m1 = cpu_ticks(v["proc"].pid), machine_ticks()
                o = json.loads(p.stdout)
                v["rounds"].append((o["requests_per_s"], (c1 - c0) / TICK / o["requests"] * 1e6,
                                    (m1[0] - m0[0]) / max(1, m1[1] - m0[1]), o["p50_us"]))
    finally:
        for v in vs:
            if "proc" in v and v["proc"].poll() is None:
                v["proc"].kill()
                v["proc"].wait()
        shutil.rmtree(tmp, ignore_errors=True)

    print("%s %s, %d rounds of %.1f s, interleaved" % (a.op, a.load, a.rounds, a.seconds))
    for v in vs:
        rs = v["rounds"]
        print("%-12s %9.0f/s  sigild %6.2f us/request  busy %.2f  p50 %5.0f us   rounds: %s" % (
            v["name"], med([x[0] for x in rs]), med([x[1] for x in rs]), med([x[2] for x in rs]),
            med([x[3] for x in rs]), " ".join("%.0f" % x[0] for x in rs)))


if __name__ == "__main__":
    main()
