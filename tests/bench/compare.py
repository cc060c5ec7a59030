#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sigild against another sigild build, in one interleaved run (issues 16, 18).

Usage: tests/bench/compare.py --build DIR --baseline DIR [--rounds R] [--seconds S] [--out FILE]
                              [--sweep] [--plot PNG] [--names NEW,BASE]

Starts two sigild (DIR/daemon/sigild: "new"; the baseline build's: "base",
e.g. a `git archive a8a873a` tree built with --buildtype=release), each
with --workers = CPUs, --ephemeral keys, a temporary socket and state
directory and its own ssh-agent socket; a third one, the new build with
--workers 1 (for verify_batch); a stock `ssh-agent -D`. Every client is
the new build's tests/bench/sigil-loadgen (the protocol is the same).
Then R rounds (default 5), the order of new and base swapped every round;
in each round, for each of new and base:

  sign at 1 connection (p50, p99, max), at 32 x 1 and at 32 x 16 in flight
  (requests/s, sigild's CPU per request from /proc/PID/stat, the machine's
  busy share from /proc/stat); verify, dh and key.public (the same round
  trip with no crypto: the floor under sign's figure) at 32 x 1; SIGN_REQUEST on
  its agent socket at 32; the worst latency of a 1-connection signer while
  another connection verifies 32 MiB messages back to back; verify_batch of
  4,096 signatures at 1 connection (wall time per request);

and once per round: the in-process sign time (thread CPU), stock ssh-agent
at 32, and verify_batch of 4,096 on the --workers 1 sigild. "Cores of
signing" = signs/s x in-process sign time. The summary gives each figure's
median [min .. max] over the rounds for new and base and the median of the
per-round ratios new/base. The JSON of every run goes to FILE (default
compare.json in the current directory). With --sweep, each round also
measures sign at 1, 2, 4, 8, 16 and 32 connections, at depth 1 and 16,
for new and base, and stock ssh-agent at each count; --plot PNG draws the
medians with tests/bench/compare-plot.gp (gnuplot).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loadgen import TICK, cpu_ticks, fail, machine_ticks, med, need, wait_socket  # noqa: E402

HOL_MSG = 32 << 20
SWEEP = [1, 2, 4, 8, 16, 32]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--out", default="compare.json")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--plot", default=None)
    ap.add_argument("--names", default="sigild (new),sigild (baseline)")
    a = ap.parse_args()
    if a.plot and not a.sweep:
        fail("--plot needs --sweep")
    lg = need(os.path.join(a.build, "tests/bench/sigil-loadgen"), "sigil-loadgen of --build")
    bins = {"new": need(os.path.join(a.build, "daemon/sigild"), "sigild of --build"),
            "base": need(os.path.join(a.baseline, "daemon/sigild"), "sigild of --baseline")}
    ssh_agent, ssh_add, ssh_keygen = (need(shutil.which(t), t) for t in ("ssh-agent", "ssh-add", "ssh-keygen"))
    ncpu = os.cpu_count()
    tmp = tempfile.mkdtemp(prefix="sigil-compare-")
    procs = []
    res = {"machine": {"cpus": ncpu, "loadavg_before": open("/proc/loadavg").read().split()[:3],
                       "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                    if l.startswith("model name")), "?"),
                       "build": os.path.abspath(a.build), "baseline": os.path.abspath(a.baseline)},
           "rounds": []}

    def run_lg(args, pid=None, seconds=None):
        sec = seconds or a.seconds
        t0 = cpu_ticks(pid) if pid else 0
        m0 = machine_ticks()
        p = subprocess.run([lg, "--json", "--seconds", str(sec)] + args, capture_output=True, text=True,
                           timeout=sec + 120)
        if p.returncode != 0:
            fail("sigil-loadgen %s: %s" % (" ".join(args), p.stderr.strip()))
        r = json.loads(p.stdout)
        m1 = machine_ticks()
        r["machine_busy"] = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
        if pid:
            dt = (cpu_ticks(pid) - t0) / TICK
            r["daemon_cpu_us_per_req"] = dt * 1e6 / r["requests"]
            if dt == 0 and r["requests"] > 1000:
                fail("process %d used no CPU for %d requests: something else answered" % (pid, r["requests"]))
        return r

    def start(name, binary, workers):
        sock = os.path.join(tmp, name + ".sock")
        agent = os.path.join(tmp, name + "-agent.sock")
        st = os.path.join(tmp, "state-" + name)
        os.mkdir(st, 0o700)
        p = subprocess.Popen([binary, "--socket", sock, "--ssh-agent-socket", agent, "--state-dir", st,
                              "--workers", str(workers), "--foreground", "--ephemeral",
                              "--allow-unlocked-memory"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        wait_socket(sock, p, name)
        return {"sock": sock, "agent": agent, "proc": p}

    try:
        d = {"new": start("new", bins["new"], ncpu), "base": start("base", bins["base"], ncpu),
             "new1": start("new-workers1", bins["new"], 1)}
        asock = os.path.join(tmp, "ssh-agent.sock")
        ag = subprocess.Popen([ssh_agent, "-D", "-a", asock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ag)
        wait_socket(asock, ag, "ssh-agent")
        keyf = os.path.join(tmp, "id_ed25519")
        subprocess.run([ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-f", keyf], check=True)
        for s in [asock, d["new"]["agent"], d["base"]["agent"]]:
            subprocess.run([ssh_add, "-q", keyf], check=True, env=dict(os.environ, SSH_AUTH_SOCK=s),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for k in d.values():  # the keys (sigil-loadgen generates them)
            run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "sign"], seconds=0.2)
            run_lg(["--socket", k["sock"], "--key", "lg-x", "--op", "dh"], seconds=0.2)

        def sign(k, c, depth=1):
            return run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "sign", "--connections", str(c),
                           "--depth", str(depth)], k["proc"].pid)

        def hol(k):
            """a 1-connection signer while another connection verifies 32 MiB messages"""
            box = {}

            def verifier():
                box["v"] = run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "verify", "--msg-size",
                                   str(HOL_MSG)], seconds=a.seconds + 1.0)
            t = threading.Thread(target=verifier)
            t.start()
            time.sleep(1.0)  # its preparation (one 32 MiB sign) and first verifies
            box["s"] = run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "sign"], seconds=max(0.3, a.seconds - 0.5))
            t.join()
            return box

        def batch(k):
            return run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "verify_batch", "--batch", "4096"],
                          k["proc"].pid)

        for i in range(a.rounds):
            rnd = {"inproc_sign_us": run_lg(["--op", "inproc-sign", "--seconds", "1"])["cpu_ns_per_op"] / 1000.0,
                   "ssh_agent_32": run_lg(["--ssh-agent", "--socket", asock, "--connections", "32"], ag.pid)}
            order = ["new", "base"] if i % 2 == 0 else ["base", "new"]
            for name in order:
                k = d[name]
                rnd[name] = {
                    "sign_1": sign(k, 1), "sign_32": sign(k, 32), "sign_32x16": sign(k, 32, 16),
                    "verify_32": run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "verify",
                                         "--connections", "32"], k["proc"].pid),
                    "dh_32": run_lg(["--socket", k["sock"], "--key", "lg-x", "--op", "dh", "--connections", "32"],
                                    k["proc"].pid),
                    "public_32": run_lg(["--socket", k["sock"], "--key", "lg-ed", "--op", "key.public",
                                         "--connections", "32"], k["proc"].pid),
                    "agent_32": run_lg(["--ssh-agent", "--socket", k["agent"], "--connections", "32"],
                                       k["proc"].pid),
                    "hol": hol(k),
                    "batch4096": batch(k),
                }
                if name == "new":
                    rnd["new1_batch4096"] = batch(d["new1"])
            if a.sweep:
                rnd["sweep"] = {}
                for c in SWEEP:
                    pt = {"ssh-agent": run_lg(["--ssh-agent", "--socket", asock, "--connections", str(c)],
                                              ag.pid)}
                    for name in order:
                        pt[name] = sign(d[name], c)
                        pt[name + "_16"] = sign(d[name], c, 16)
                    rnd["sweep"][c] = pt
            res["rounds"].append(rnd)
            sys.stderr.write("round %d/%d done\n" % (i + 1, a.rounds))
        res["machine"]["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)

    rounds = res["rounds"]
    figs = [
        ("cores of signing, 32 x 16", lambda r, n: r[n]["sign_32x16"]["requests_per_s"] * r["inproc_sign_us"] / 1e6,
         "%.2f"),
        ("cores of signing, 32 x 1", lambda r, n: r[n]["sign_32"]["requests_per_s"] * r["inproc_sign_us"] / 1e6,
         "%.2f"),
        ("cores of signing if signing cost nothing, 32 x 1 (key.public/s x in-process sign)",
         lambda r, n: r[n]["public_32"]["requests_per_s"] * r["inproc_sign_us"] / 1e6, "%.2f"),
        ("sign/s / key.public/s, 32 x 1", lambda r, n: r[n]["sign_32"]["requests_per_s"]
         / r[n]["public_32"]["requests_per_s"], "%.2f"),
        ("sign/s, 32 x 16", lambda r, n: r[n]["sign_32x16"]["requests_per_s"], "%.0f"),
        ("sign/s, 32 x 1", lambda r, n: r[n]["sign_32"]["requests_per_s"], "%.0f"),
        ("machine busy during 32 x 16", lambda r, n: r[n]["sign_32x16"]["machine_busy"], "%.2f"),
        ("machine busy during 32 x 1", lambda r, n: r[n]["sign_32"]["machine_busy"], "%.2f"),
        ("key.public/s, 32 x 1 (the round trip, no crypto)", lambda r, n: r[n]["public_32"]["requests_per_s"],
         "%.0f"),
        ("machine busy during key.public 32 x 1", lambda r, n: r[n]["public_32"]["machine_busy"], "%.2f"),
        ("machine CPU per request, sign 32 x 1, us", lambda r, n: r[n]["sign_32"]["machine_busy"] * 1e6
         / r[n]["sign_32"]["requests_per_s"] * ncpu, "%.1f"),
        ("machine CPU per request, key.public 32 x 1, us", lambda r, n: r[n]["public_32"]["machine_busy"] * 1e6
         / r[n]["public_32"]["requests_per_s"] * ncpu, "%.1f"),
        ("daemon CPU per sign / in-process, 32 x 16",
         lambda r, n: r[n]["sign_32x16"]["daemon_cpu_us_per_req"] / r["inproc_sign_us"], "%.2f"),
        ("daemon CPU per sign / in-process, 32 x 1",
         lambda r, n: r[n]["sign_32"]["daemon_cpu_us_per_req"] / r["inproc_sign_us"], "%.2f"),
        ("sign p50 at 1 connection, us", lambda r, n: r[n]["sign_1"]["p50_us"], "%.1f"),
        ("sign p99 at 1 connection, us", lambda r, n: r[n]["sign_1"]["p99_us"], "%.1f"),
        ("p99 at 1 / (3 x sign + 50 us)", lambda r, n: r[n]["sign_1"]["p99_us"] / (3 * r["inproc_sign_us"] + 50),
         "%.2f"),
        ("daemon CPU per sign at 1 connection, us", lambda r, n: r[n]["sign_1"]["daemon_cpu_us_per_req"], "%.1f"),
        ("worst sign latency beside 32 MiB verifies, ms", lambda r, n: r[n]["hol"]["s"]["max_us"] / 1000, "%.2f"),
        ("sign p99 beside 32 MiB verifies, us", lambda r, n: r[n]["hol"]["s"]["p99_us"], "%.1f"),
        ("32 MiB verifies/s (the other connection)", lambda r, n: r[n]["hol"]["v"]["requests_per_s"], "%.1f"),
        ("verify/s, 32 x 1", lambda r, n: r[n]["verify_32"]["requests_per_s"], "%.0f"),
        ("dh/s, 32 x 1", lambda r, n: r[n]["dh_32"]["requests_per_s"], "%.0f"),
        ("daemon CPU per verify, 32 x 1, us", lambda r, n: r[n]["verify_32"]["daemon_cpu_us_per_req"], "%.1f"),
        ("daemon CPU per dh, 32 x 1, us", lambda r, n: r[n]["dh_32"]["daemon_cpu_us_per_req"], "%.1f"),
        ("machine busy during verify 32 x 1", lambda r, n: r[n]["verify_32"]["machine_busy"], "%.2f"),
        ("machine busy during dh 32 x 1", lambda r, n: r[n]["dh_32"]["machine_busy"], "%.2f"),
        ("agent SIGN_REQUEST/s, 32", lambda r, n: r[n]["agent_32"]["requests_per_s"], "%.0f"),
        ("agent sign / stock ssh-agent, 32", lambda r, n: r[n]["agent_32"]["requests_per_s"]
         / r["ssh_agent_32"]["requests_per_s"], "%.1f"),
        ("verify_batch 4096, wall ms (p50)", lambda r, n: r[n]["batch4096"]["p50_us"] / 1000, "%.2f"),
    ]
    print("machine: %s, %d CPUs; load average before %s, after %s; %d rounds, %.1f s a point" % (
        res["machine"]["cpu"], ncpu, " ".join(res["machine"]["loadavg_before"]),
        " ".join(res["machine"]["loadavg_after"]), len(rounds), a.seconds))
    print("in-process sign (thread CPU): %.2f us [%.2f .. %.2f]" % (
        med([r["inproc_sign_us"] for r in rounds]), min(r["inproc_sign_us"] for r in rounds),
        max(r["inproc_sign_us"] for r in rounds)))
    print("| figure | new | base | new / base |")
    print("|---|---:|---:|---:|")
    summary = {}

    def show(fmt, xs):
        return (fmt + " [" + fmt + " .. " + fmt + "]") % (med(xs), min(xs), max(xs))
    for name, f, fmt in figs:
        n = [f(r, "new") for r in rounds]
        b = [f(r, "base") for r in rounds]
        q = [x / y if y else float("inf") for x, y in zip(n, b)]
        summary[name] = {"new": n, "base": b, "ratio": q}
        print("| %s | %s | %s | %s |" % (name, show(fmt, n), show(fmt, b), show("%.2f", q)))
    w1 = [r["new1_batch4096"]["p50_us"] / 1000 for r in rounds]
    q1 = [r["new"]["batch4096"]["p50_us"] / 1000 / x for r, x in zip(rounds, w1)]
    print("verify_batch 4096 on the new sigild with --workers 1: %s ms; --workers %d / --workers 1 = %s" % (
        show("%.2f", w1), ncpu, show("%.2f", q1)))
    print("stock ssh-agent at 32: %s signs/s" % show("%.0f", [r["ssh_agent_32"]["requests_per_s"] for r in rounds]))
    res["summary"] = summary
    if a.sweep:
        tsv = os.path.splitext(a.out)[0] + ".tsv"
        with open(tsv, "w") as f:
            f.write("# connections\tnew\tbase\tnew x16\tbase x16\tssh-agent (signs/s, median of the rounds)\n")
            for c in SWEEP:
                cols = [med([r["sweep"][c][k]["requests_per_s"] for r in rounds])
                        for k in ("new", "base", "new_16", "base_16", "ssh-agent")]
                f.write("%d\t%s\n" % (c, "\t".join("%.1f" % x for x in cols)))
                print("sweep %2d connections: new %.0f, base %.0f, new x16 %.0f, base x16 %.0f, ssh-agent %.0f"
                      % tuple([c] + cols))
        if a.plot:
            gnuplot = need(shutil.which("gnuplot"), "gnuplot (Debian: gnuplot-nox)")
            new_name, base_name = (a.names.split(",", 1) + ["baseline"])[:2]
            sub = "%s, %d CPUs, %s; load average %s" % (time.strftime("%Y-%m-%d"), ncpu, res["machine"]["cpu"],
                                                        " ".join(res["machine"]["loadavg_before"]))
            subprocess.run([gnuplot, "-e", "infile='%s'; outfile='%s'; subtitle='%s'; newname='%s'; basename='%s'"
                            % (tsv, a.plot, sub, new_name, base_name),
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "compare-plot.gp")],
                           check=True)
            print("wrote %s" % a.plot)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
