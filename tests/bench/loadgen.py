#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 11 in one run: sigild vs stock ssh-agent, throughput and latency.

Usage: tests/bench/loadgen.py [--build DIR] [--seconds S] [--out DIR] [--perf]

Starts sigild (from DIR, a release build: meson setup DIR --buildtype=release)
on a temporary socket and state directory with --workers = CPUs, a stock
`ssh-agent -D` with a fresh Ed25519 key, and runs DIR/tests/bench/sigil-loadgen
against both, interleaved, at 1, 2, 4, 8, 16 and 32 connections. Also: the
in-process sign/verify/dh time, sigild's own ssh-agent socket, verify, dh and
verify_batch throughput, and the daemon's CPU per request (utime+stime from
/proc/PID/stat before and after each run, divided by the requests answered).
Writes OUT/loadgen.json (every figure) and OUT/throughput.tsv, then plots
OUT/throughput.png with tests/bench/loadgen-plot.gp (gnuplot). Default OUT:
the build directory's loadgen/ folder. The in-process figures are the
thread's CPU time per operation (CLOCK_THREAD_CPUTIME_ID; wall time is also
kept), comparable with the daemon's CPU time on a shared machine. With --perf, profiles sigild under
32-connection sign load with `perf record` and writes OUT/perf-report.txt.
Then --rounds R (default 5) interleaved rounds of the issue's three targets
(in-process sign, sign at 1 and 32 connections, ssh-agent at 32, pipelined
sign at 32x16), summarised as median [min .. max] over the rounds, with a
second sigild started with busy_poll_us = 0 (sigil.conf(5)) at 1 and 32
connections for comparison, and tests/bench/wakeup-floor at 32
connections: the CPU an epoll server that only reads and answers spends per
depth-1 request (the kernel's floor under sigild's CPU per request).
About 2.5 minutes with the default 2 s per point.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CONNS = [1, 2, 4, 8, 16, 32]
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TICK = os.sysconf("SC_CLK_TCK")


def fail(msg):
    sys.stderr.write("loadgen.py: %s\n" % msg)
    sys.exit(1)


def need(path, what):
    if not (path and os.path.exists(path)):
        fail("%s not found (%s)" % (what, path))
    return path


def wait_socket(path, proc, what):
    for _ in range(1000):
        if proc.poll() is not None:
            fail("%s exited (status %s) before its socket came up" % (what, proc.returncode))
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.close()
            return
        except OSError:
            time.sleep(0.01)
    fail("%s: socket %s did not come up" % (what, path))


def med(xs):
    """the median (the mean of the two middle values of an even count)"""
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    # fields 14 and 15 (utime, stime); rest[0] is field 3
    return int(rest[11]) + int(rest[12])


def machine_ticks():
    """(busy, total) clock ticks of all CPUs from /proc/stat"""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return sum(v) - idle, sum(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build-loadgen"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--perf", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "loadgen"))
    os.makedirs(out, exist_ok=True)
    lg = need(os.path.join(build, "tests/bench/sigil-loadgen"), "sigil-loadgen (ninja -C BUILD tests/bench/sigil-loadgen)")
    sigild = need(os.path.join(build, "daemon/sigild"), "sigild (ninja -C BUILD daemon/sigild)")
    floor = need(os.path.join(build, "tests/bench/wakeup-floor"), "wakeup-floor (ninja -C BUILD tests/bench/wakeup-floor)")
    ssh_agent = need(shutil.which("ssh-agent"), "ssh-agent (openssh-client)")
    ssh_add = need(shutil.which("ssh-add"), "ssh-add (openssh-client)")
    ssh_keygen = need(shutil.which("ssh-keygen"), "ssh-keygen (openssh-client)")
    gnuplot = need(shutil.which("gnuplot"), "gnuplot (Debian: gnuplot-nox)")
    buildtype = "?"
    try:
        info = json.load(open(os.path.join(build, "meson-info/intro-buildoptions.json")))
        buildtype = next(o["value"] for o in info if o["name"] == "buildtype")
    except (OSError, ValueError, StopIteration):
        pass
    if buildtype != "release":
        sys.stderr.write("loadgen.py: warning: %s is a '%s' build, not release\n" % (build, buildtype))
    ncpu = os.cpu_count()
    tmp = tempfile.mkdtemp(prefix="sigil-loadgen-")
    procs = []
    res = {"machine": {}, "inproc": {}, "runs": []}

    def run_lg(args, pid=None):
        t0 = cpu_ticks(pid) if pid else 0
        m0 = machine_ticks()
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([lg, "--json", "--seconds", str(a.seconds)] + args,
                           capture_output=True, text=True, timeout=a.seconds + 60)
        if p.returncode != 0:
            fail("sigil-loadgen %s: %s" % (" ".join(args), p.stderr.strip()))
        r = json.loads(p.stdout)
        m1 = machine_ticks()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # the whole machine's CPUs: busy share, and sigil-loadgen's own CPU
        r["machine_busy"] = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])
        r["loadgen_cpu_s"] = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
        if pid:
            dt = (cpu_ticks(pid) - t0) / TICK
            r["daemon_cpu_s"] = dt
            r["daemon_cpu_us_per_req"] = dt * 1e6 / r["requests"]
            if dt == 0 and r["requests"] > 1000:
                fail("process %d used no CPU for %d requests: something else answered" % (pid, r["requests"]))
        return r

    try:
        res["machine"] = {
            "cpus": ncpu,
            "uname": " ".join(os.uname()),
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
            "loadavg_before": open("/proc/loadavg").read().split()[:3],
            "buildtype": buildtype,
            "seconds_per_point": a.seconds,
            "note": "2 CPUs shared with other jobs; time on this machine wanders by up to 50% between runs",
            "ssh_agent_version": subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip(),
        }
        def start_sigild(name, agent_sock, extra, out, what):
            """sigild on tmp/NAME.sock with state tmp/state-NAME, ephemeral keys"""
            path = os.path.join(tmp, name + ".sock")
            st = os.path.join(tmp, "state-" + name)
            os.mkdir(st, 0o700)
            p = subprocess.Popen([sigild] + extra + ["--socket", path, "--ssh-agent-socket", agent_sock,
                                                     "--state-dir", st, "--workers", str(ncpu), "--foreground",
                                                     "--ephemeral", "--allow-unlocked-memory"],
                                 stdout=out, stderr=subprocess.STDOUT)
            procs.append(p)
            wait_socket(path, p, what)
            return path, p

        # sigild, its own ssh-agent socket too; one audit line per sign:
        # the log grows by ~100 MB a minute; only its head is kept
        ssock = os.path.join(tmp, "sigild-agent.sock")
        log = open(os.path.join(tmp, "sigild.log"), "w")
        sock, d = start_sigild("sigild", ssock, [], log, "sigild")
        # the same without busy polling (config busy_poll_us = 0), for the rounds' A/B
        conf0 = os.path.join(tmp, "nopoll.conf")
        with open(conf0, "w") as f:
            f.write("busy_poll_us = 0\n")
        sock0, d0 = start_sigild("sigild-nopoll", "none", ["--config", conf0], subprocess.DEVNULL,
                                 "sigild (busy_poll_us = 0)")
        # stock ssh-agent with a fresh Ed25519 key
        asock = os.path.join(tmp, "ssh-agent.sock")
        ag = subprocess.Popen([ssh_agent, "-D", "-a", asock], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ag)
        wait_socket(asock, ag, "ssh-agent")
        time.sleep(0.1)
        if ag.poll() is not None:
            fail("ssh-agent exited (status %s): is %s taken?" % (ag.returncode, asock))
        keyf = os.path.join(tmp, "id_ed25519")
        subprocess.run([ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-f", keyf], check=True)
        for s in (asock, ssock):
            subprocess.run([ssh_add, "-q", keyf], check=True, env=dict(os.environ, SSH_AUTH_SOCK=s),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # keys (sigil-loadgen creates them when missing)
        run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign", "--seconds", "0.2"])
        run_lg(["--socket", sock, "--key", "lg-x", "--op", "dh", "--seconds", "0.2"])
        run_lg(["--socket", sock0, "--key", "lg-ed", "--op", "sign", "--seconds", "0.2"])

        def inproc():
            for op in ("sign", "verify", "dh"):
                r = run_lg(["--op", "inproc-" + op, "--seconds", str(min(a.seconds, 1.0))])
                res["inproc"].setdefault(op, []).append(r["cpu_ns_per_op"] / 1000.0)
                res["inproc"].setdefault(op + "_wall", []).append(r["ns_per_op"] / 1000.0)

        inproc()
        for c in CONNS:
            res["runs"].append(dict(run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign",
                                            "--connections", str(c)], d.pid), target="sigild"))
            res["runs"].append(dict(run_lg(["--ssh-agent", "--socket", asock, "--connections", str(c)], ag.pid),
                                    target="ssh-agent"))
            res["runs"].append(dict(run_lg(["--ssh-agent", "--socket", ssock, "--connections", str(c)], d.pid),
                                    target="sigild-agent"))
        inproc()
        for c in (1, 32):
            res["runs"].append(dict(run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign", "--connections",
                                            str(c), "--depth", "16"], d.pid), target="sigild"))
            res["runs"].append(dict(run_lg(["--socket", sock, "--key", "lg-ed", "--op", "verify",
                                            "--connections", str(c)], d.pid), target="sigild"))
            res["runs"].append(dict(run_lg(["--socket", sock, "--key", "lg-x", "--op", "dh",
                                            "--connections", str(c)], d.pid), target="sigild"))
            res["runs"].append(dict(run_lg(["--socket", sock, "--key", "lg-ed", "--op", "verify_batch",
                                            "--batch", "64", "--connections", str(min(c, ncpu))], d.pid),
                                    target="sigild"))
        inproc()
        # the three targets again, in interleaved rounds: each
        # round has its own in-process sign time and ssh-agent figure, and
        # the summary reports the rounds' median with their spread
        for i in range(a.rounds):
            rnd = {"inproc_sign_us": run_lg(["--op", "inproc-sign", "--seconds", "1"])["cpu_ns_per_op"] / 1000.0}
            rnd["sigild_1"] = run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign"], d.pid)
            rnd["sigild_32"] = run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign", "--connections", "32"],
                                      d.pid)
            rnd["ssh_agent_32"] = run_lg(["--ssh-agent", "--socket", asock, "--connections", "32"], ag.pid)
            rnd["nopoll_1"] = run_lg(["--socket", sock0, "--key", "lg-ed", "--op", "sign"], d0.pid)
            rnd["nopoll_32"] = run_lg(["--socket", sock0, "--key", "lg-ed", "--op", "sign", "--connections", "32"],
                                      d0.pid)
            fl = subprocess.run([floor, "--json", "--connections", "32", "--seconds", str(a.seconds)],
                                capture_output=True, text=True, timeout=a.seconds + 60)
            if fl.returncode != 0:
                fail("wakeup-floor: %s" % fl.stderr.strip())
            rnd["floor_32"] = json.loads(fl.stdout)
            rnd["sigild_32x16"] = run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign", "--connections", "32",
                                          "--depth", "16"], d.pid)
            res.setdefault("rounds", []).append(rnd)
        if a.perf:
            perf = need(shutil.which("perf"), "perf")
            data = os.path.join(out, "perf.data")
            pr = subprocess.Popen([perf, "record", "-q", "-g", "-o", data, "-p", str(d.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            res["perf_run"] = run_lg(["--socket", sock, "--key", "lg-ed", "--op", "sign", "--connections", "32",
                                      "--seconds", str(max(a.seconds, 2.0))], d.pid)
            pr.send_signal(signal.SIGINT)
            pr.wait(timeout=60)
            with open(os.path.join(out, "perf-report.txt"), "w") as f:
                subprocess.run([perf, "report", "-i", data, "--no-children", "--sort", "dso", "--stdio", "-g",
                                "none"], stdout=f, stderr=subprocess.DEVNULL, check=True)
                f.flush()
                subprocess.run([perf, "report", "-i", data, "--no-children", "--sort", "dso,symbol",
                                "--stdio", "-g", "none", "--percent-limit", "0.5"], stdout=f,
                               stderr=subprocess.DEVNULL, check=True)
            if "%" not in open(os.path.join(out, "perf-report.txt")).read():
                fail("perf recorded no samples of sigild (%s)" % data)
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
        try:
            with open(os.path.join(tmp, "sigild.log"), "rb") as f, open(os.path.join(out, "sigild.log.head"), "wb") as g:
                g.write(b"".join(f.readline() for _ in range(40)))
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)

    # summary against the issue-11 targets
    sign_us = med(res["inproc"]["sign"])
    res["inproc_sign_us_median"] = sign_us

    def pick(target, op="sign", c=1, depth=1):
        return next(r for r in res["runs"] if r["target"] == target and r["op"] == op
                    and r["connections"] == c and r["depth"] == depth)

    s32, a32, s1 = pick("sigild", c=32), pick("ssh-agent", c=32), pick("sigild", c=1)
    best = max(r["requests_per_s"] for r in res["runs"] if r["target"] == "sigild" and r["op"] == "sign")
    cpu_per = [r["daemon_cpu_us_per_req"] for r in res["runs"] if r["target"] == "sigild" and r["op"] == "sign"]
    rounds = res.get("rounds", [])
    rt = {
        "ratio_32": [r["sigild_32"]["requests_per_s"] / r["ssh_agent_32"]["requests_per_s"] for r in rounds],
        "sigild_32": [r["sigild_32"]["requests_per_s"] for r in rounds],
        "ssh_agent_32": [r["ssh_agent_32"]["requests_per_s"] for r in rounds],
        "cpu_over_inproc_32x16": [r["sigild_32x16"]["daemon_cpu_us_per_req"] / r["inproc_sign_us"] for r in rounds],
        "cpu_over_inproc_32": [r["sigild_32"]["daemon_cpu_us_per_req"] / r["inproc_sign_us"] for r in rounds],
        "p99_1": [r["sigild_1"]["p99_us"] for r in rounds],
        "p99_1_bound": [3 * r["inproc_sign_us"] + 50 for r in rounds],
        "p99_1_over_bound": [r["sigild_1"]["p99_us"] / (3 * r["inproc_sign_us"] + 50) for r in rounds],
        "inproc_sign_us": [r["inproc_sign_us"] for r in rounds],
        "floor_us_32": [r["floor_32"]["server_cpu_us_per_req"] for r in rounds],
        "over_floor_32": [(r["sigild_32"]["daemon_cpu_us_per_req"] - r["floor_32"]["server_cpu_us_per_req"])
                          / r["inproc_sign_us"] for r in rounds],
        "machine_busy_32": [r["sigild_32"]["machine_busy"] for r in rounds],
        "sigild_cpus_32": [r["sigild_32"]["daemon_cpu_s"] / r["sigild_32"]["seconds"] for r in rounds],
        "loadgen_cpus_32": [r["sigild_32"]["loadgen_cpu_s"] / r["sigild_32"]["seconds"] for r in rounds],
        "loadgen_us_per_req_32": [r["sigild_32"]["loadgen_cpu_s"] * 1e6 / r["sigild_32"]["requests"] for r in rounds],
        "nopoll_ratio_32": [r["nopoll_32"]["requests_per_s"] / r["ssh_agent_32"]["requests_per_s"] for r in rounds],
        "nopoll_p99_1": [r["nopoll_1"]["p99_us"] for r in rounds],
        "p50_1": [r["sigild_1"]["p50_us"] for r in rounds],
        "nopoll_p50_1": [r["nopoll_1"]["p50_us"] for r in rounds],
        "cpu_per_req_1": [r["sigild_1"]["daemon_cpu_us_per_req"] for r in rounds],
        "nopoll_cpu_per_req_1": [r["nopoll_1"]["daemon_cpu_us_per_req"] for r in rounds],
    }
    res["rounds_summary"] = {k: {"median": med(v), "min": min(v), "max": max(v)} for k, v in rt.items() if v}
    res["targets"] = {
        "sign_32_ratio_vs_ssh_agent": s32["requests_per_s"] / a32["requests_per_s"],
        "best_sign_ratio_vs_ssh_agent_32": best / a32["requests_per_s"],
        "daemon_cpu_per_sign_over_inproc_min": min(cpu_per) / sign_us,
        "daemon_cpu_per_sign_over_inproc_at_32": s32["daemon_cpu_us_per_req"] / sign_us,
        "p99_1conn_us": s1["p99_us"],
        "p99_1conn_bound_us": 3 * sign_us + 50,
    }
    with open(os.path.join(out, "loadgen.json"), "w") as f:
        json.dump(res, f, indent=1)
    tsv = os.path.join(out, "throughput.tsv")
    with open(tsv, "w") as f:
        f.write("# connections\tsigild\tssh-agent\tsigild-agent\n")
        for c in CONNS:
            f.write("%d\t%.1f\t%.1f\t%.1f\n" % (c, pick("sigild", c=c)["requests_per_s"],
                                              pick("ssh-agent", c=c)["requests_per_s"],
                                              pick("sigild-agent", c=c)["requests_per_s"]))
    png = os.path.join(out, "throughput.png")
    subprocess.run([gnuplot, "-e", "infile='%s'; outfile='%s'; subtitle='%s'" % (
        tsv, png, "%s, %d CPUs shared with other jobs, %s build" % (time.strftime("%Y-%m-%d"), ncpu, buildtype)),
        os.path.join(HERE, "loadgen-plot.gp")], check=True)

    print("machine: %s; %d CPUs SHARED with other jobs; load before %s after %s" % (
        res["machine"]["cpu"], ncpu, " ".join(res["machine"]["loadavg_before"]),
        " ".join(res["machine"]["loadavg_after"])))
    print("in-process (one thread, us/op of thread CPU time, and _wall: wall time; 3 times each): " + "; ".join(
        "%s %s" % (k, " ".join("%.1f" % x for x in v)) for k, v in res["inproc"].items()))
    print("%-13s %-12s %5s %5s %10s %9s %9s %9s %9s %12s" % ("target", "op", "conns", "depth", "req/s", "p50 us",
                                                             "p90 us", "p99 us", "p99.9 us", "cpu us/req"))
    for r in res["runs"]:
        print("%-13s %-12s %5d %5d %10.0f %9.1f %9.1f %9.1f %9.1f %12s" % (
            r["target"], r["op"] + ("x%d" % r["batch"] if r["batch"] > 1 else ""), r["connections"], r["depth"],
            r["requests_per_s"], r["p50_us"], r["p90_us"], r["p99_us"], r["p999_us"],
            "%.1f" % r["daemon_cpu_us_per_req"] if "daemon_cpu_us_per_req" in r else "-"))
    t = res["targets"]
    print("targets: sign@32 sigild/ssh-agent = %.1fx (>= 25x); best sigild sign / ssh-agent@32 = %.1fx" % (
        t["sign_32_ratio_vs_ssh_agent"], t["best_sign_ratio_vs_ssh_agent_32"]))
    print("         daemon CPU per sign / in-process sign (%.1f us) = %.2fx best, %.2fx at 32 conns (<= 1.3x)" % (
        sign_us, t["daemon_cpu_per_sign_over_inproc_min"], t["daemon_cpu_per_sign_over_inproc_at_32"]))
    print("         p99 at 1 connection = %.1f us (<= 3 x %.1f + 50 = %.1f us)" % (
        t["p99_1conn_us"], sign_us, t["p99_1conn_bound_us"]))
    if rounds:
        rs = res["rounds_summary"]

        def show(k, fmt):
            return (fmt + " [" + fmt + " .. " + fmt + "]") % (rs[k]["median"], rs[k]["min"], rs[k]["max"])
        print("%d interleaved rounds, median [min .. max]:" % len(rounds))
        print("  sign@32: sigild %s req/s, ssh-agent %s req/s, ratio %s (>= 25x)" % (
            show("sigild_32", "%.0f"), show("ssh_agent_32", "%.0f"), show("ratio_32", "%.1fx")))
        print("  during sign@32: the machine's %d CPUs %s busy; sigild used %s CPUs, sigil-loadgen %s CPUs "
              "(%s us a request)" % (ncpu, show("machine_busy_32", "%.2f"), show("sigild_cpus_32", "%.2f"),
                                     show("loadgen_cpus_32", "%.2f"), show("loadgen_us_per_req_32", "%.1f")))
        print("  daemon CPU per sign / in-process sign (%s us): %s at 32x16 (<= 1.3x), %s at 32x1" % (
            show("inproc_sign_us", "%.1f"), show("cpu_over_inproc_32x16", "%.2fx"),
            show("cpu_over_inproc_32", "%.2fx")))
        print("  kernel floor (wakeup-floor, 32 x 1, a server that only reads and writes): %s us a request; "
              "sigild at 32 x 1 minus that floor = %s the in-process sign" % (
                  show("floor_us_32", "%.1f"), show("over_floor_32", "%.2fx")))
        print("  p99 at 1 connection: %s us, bound 3 x sign + 50 = %s us, p99/bound %s (<= 1)" % (
            show("p99_1", "%.1f"), show("p99_1_bound", "%.1f"), show("p99_1_over_bound", "%.2f")))
        print("  busy_poll_us = 0 instead: sign@32 ratio %s; 1 connection p50 %s us (with: %s), p99 %s us; "
              "daemon CPU per request at 1 connection %s us (with: %s)" % (
                  show("nopoll_ratio_32", "%.1fx"), show("nopoll_p50_1", "%.1f"), show("p50_1", "%.1f"),
                  show("nopoll_p99_1", "%.1f"), show("nopoll_cpu_per_req_1", "%.1f"),
                  show("cpu_per_req_1", "%.1f")))
    if "perf_run" in res:
        print("perf: %s/perf-report.txt" % out)
    print("wrote %s, %s, %s" % (os.path.join(out, "loadgen.json"), tsv, png))


if __name__ == "__main__":
    main()
