#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_upstream.py - the upstream agent under the one authority (issues 16, 21).

sigild runs as root with --ssh-agent-upstream naming a fake upstream agent
written here (a Unix socket server in this process that records every
message it gets), uid 65534 admitted through allow_uids (test_authority.py's
Daemon), and peers run through setpriv (peer.py). Checked:
- the upstream is used only by connections sigild admits: uid 65533 (in
  the socket's group, not in allow_uids) is refused, and the upstream sees
  no connection and no message from it;
- a relayed signature (an RSA key sigild does not hold) writes exactly one
  op=relay audit line with the peer's uid, the key's SHA256 fingerprint,
  why="sign" and the upstream's result (ok, failed), and no ssh-sign line;
- sigild's rules come first: a key sigild holds is never relayed (its
  policy answers), a user's agent LOCK is refused and its copy never
  reaches the upstream, an admin's LOCK and UNLOCK are copied; while sigild
  is locked nothing but the copies is relayed (op=relay result=locked).
Runs as root (setpriv). Output is TAP.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import sigiltest  # noqa: E402
import test_authority as ta  # noqa: E402
from agentproto import string, u32  # noqa: E402

STRANGER_UID = 65533  # in the socket's group (65534), not admitted
RSA_BLOB = string("ssh-rsa") + string(b"\x01\x00\x01") + string(b"\x00" + bytes([0xc5]) * 256)
RSA_SIG = string(string("rsa-sha2-512") + string(bytes([0x5a]) * 256))
RSA_FP = "SHA256:" + base64.b64encode(hashlib.sha256(RSA_BLOB).digest()).decode().rstrip("=")


def sign_msg(blob, data, flags=4):
    return bytes([13]) + string(blob) + string(data) + u32(flags)


class FakeUpstream:
    """An agent that lists RSA_BLOB, signs anything but b"fail" with RSA_SIG,
    answers query with FAILURE (as OpenSSH 9.2's) and everything else with
    SUCCESS; self.msgs holds (connection number, message) of every request."""

    def __init__(self, path):
        self.path = path
        self.msgs = []
        self.n_conns = 0
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(16)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            with self.lock:
                self.n_conns += 1
                n = self.n_conns
            threading.Thread(target=self.serve, args=(s, n), daemon=True).start()

    def serve(self, s, n):
        buf = b""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                    ln = struct.unpack(">I", buf[:4])[0]
                    msg, buf = buf[4:4 + ln], buf[4 + ln:]
                    with self.lock:
                        self.msgs.append((n, msg))
                    ans = self.answer(msg)
                    s.sendall(u32(len(ans)) + ans)
        except OSError:
            return
        finally:
            s.close()

    @staticmethod
    def answer(msg):
        if msg[0] == 11:
            return bytes([12]) + u32(1) + string(RSA_BLOB) + string("upstream-rsa")
        if msg[0] == 13:
            return bytes([5]) if b"fail" in msg else bytes([14]) + RSA_SIG
        if msg[0] == 27 and msg[1:] == string("query"):
            return bytes([5])
        return bytes([6])

    def types(self):
        with self.lock:
            return [m[0] for _, m in self.msgs]

    def close(self):
        self.srv.close()


def setup(tmp):
    up = FakeUpstream(os.path.join(tmp, "up.sock"))
    d = ta.Daemon(tmp, args=["--ssh-agent-upstream", up.path]).start()
    c = d.client()
    # root's key, for root only
    root_priv = ta.import_ed(c, "rootonly", {"uids": [0]})
    c.close()
    return up, d, ta.raw_pub(root_priv)


def run_peer(d, steps, reuid=ta.PEER_UID, regid=ta.PEER_UID):
    """peer.py's steps as reuid/regid; their results."""
    sp = shutil.which("setpriv")
    assert sp, "setpriv (util-linux) is required"
    prog = json.dumps({"main": d.sock, "agent": d.agent, "steps": ta._enc(list(steps))})
    r = subprocess.run([sp, f"--reuid={reuid}", f"--regid={regid}", "--clear-groups", ta.PY,
                        os.path.join(HERE, "peer.py"), prog], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = ta._dec(json.loads(r.stdout.strip().splitlines()[-1]))
    for st, res in zip(steps, out):
        assert "exc" not in res, (st, res)
    return out


def raw(msg):
    return {"agent": "raw", "msg": msg}


def relay_lines(d, why=None):
    """The op=relay audit lines (why= may hold spaces), whose why starts with why."""
    out = []
    for line in d.audit():
        f = dict(x.split("=", 1) for x in line.split(" why=")[0].split(" ") if "=" in x)
        m = re.search(r' why="([^"]*)"', line)
        f["why"] = m.group(1) if m else ""
        if f.get("op") == "relay" and (why is None or f["why"].startswith(why)):
            out.append(f)
    return out


def listed_blobs(ans):
    assert ans[0] == 12, ans[:1]
    n, off, out = struct.unpack(">I", ans[1:5])[0], 5, []
    for _ in range(n):
        ln = struct.unpack(">I", ans[off:off + 4])[0]
        blob = ans[off + 4:off + 4 + ln]
        off += 4 + ln
        off += 4 + struct.unpack(">I", ans[off:off + 4])[0]
        out.append(blob)
    assert off == len(ans), "the count does not match the entries"
    return out


def test_upstream_only_for_admitted_peers(tmp):
    up, d, _ = setup(tmp)
    try:
        # the admitted user: the upstream's key is listed and signs
        res = run_peer(d, [raw(bytes([11])), raw(sign_msg(RSA_BLOB, b"hello"))])
        assert RSA_BLOB in listed_blobs(ta.ok(res[0])), res[0]
        assert ta.ok(res[1]) == bytes([14]) + RSA_SIG, res[1]
        assert 11 in up.types() and 13 in up.types(), up.types()
        # uid 65533 reaches the socket (group 65534) but is not admitted:
        # refused at accept, nothing of it reaches the upstream
        n_conns, n_msgs = up.n_conns, len(up.msgs)
        res = run_peer(d, [raw(bytes([11])), raw(sign_msg(RSA_BLOB, b"stranger"))], reuid=STRANGER_UID,
                       regid=ta.PEER_UID)
        assert all("closed" in r for r in res), res
        time.sleep(0.5)
        assert up.n_conns == n_conns and len(up.msgs) == n_msgs, (up.n_conns, up.msgs[n_msgs:])
        assert f"refused connection from uid {STRANGER_UID}" in d.lastlog(), d.lastlog()[-2000:]
        assert not [f for f in relay_lines(d) if f.get("uid") == str(STRANGER_UID)]
    finally:
        d.stop()
        up.close()


def test_relayed_sign_audited_once(tmp):
    up, d, _ = setup(tmp)
    try:
        before = len(relay_lines(d, "sign"))
        res = run_peer(d, [raw(sign_msg(RSA_BLOB, b"release"))])
        assert ta.ok(res[0]) == bytes([14]) + RSA_SIG, res
        lines = relay_lines(d, "sign")
        assert len(lines) == before + 1, lines
        f = lines[-1]
        assert (f["uid"], f["fp"], f["result"], f["why"]) == (str(ta.PEER_UID), RSA_FP, "ok", "sign"), f
        assert not [g for g in ta.audit_lines(d, "ssh-sign") if g.get("fp") == RSA_FP]
        # the upstream refuses: FAILURE, and the line says so
        res = run_peer(d, [raw(sign_msg(RSA_BLOB, b"fail"))])
        assert ta.ok(res[0]) == bytes([5]), res
        lines = relay_lines(d, "sign")
        assert len(lines) == before + 2 and lines[-1]["result"] == "failed", lines
        # ADD of an RSA key: relayed, one line (why="add ssh-rsa"), no ssh-add line
        add = bytes([17]) + string("ssh-rsa") + string(b"\x00" * 8) + string("k")
        res = run_peer(d, [raw(add)])
        assert ta.ok(res[0]) == bytes([6]), res
        assert up.msgs[-1][1] == add
        assert [g["result"] for g in relay_lines(d, "add ssh-rsa")] == ["ok"]
        assert not [g for g in ta.audit_lines(d, "ssh-add") if g.get("uid") == str(ta.PEER_UID)]
    finally:
        d.stop()
        up.close()


def test_sigil_rules_first(tmp):
    up, d, root_pk = setup(tmp)
    try:
        # a key sigild holds is answered by its own rules, never relayed
        res = run_peer(d, [raw(sign_msg(ta.agentproto.ed_blob(root_pk), b"x", flags=0))])
        assert ta.ok(res[0]) == bytes([5]), res
        assert 13 not in up.types(), up.types()
        denied = [f for f in ta.audit_lines(d, "ssh-sign", "rootonly") if f["result"] == "denied"]
        assert denied and denied[-1]["uid"] == str(ta.PEER_UID), denied
        # a user's LOCK: refused by sigild (admins only), no copy upstream
        res = run_peer(d, [raw(bytes([22]) + string("pw"))])
        assert ta.ok(res[0]) == bytes([5]), res
        time.sleep(0.3)
        assert 22 not in up.types(), up.types()
        assert not relay_lines(d, "lock")
        # root's LOCK: sigild locks, the copy reaches the upstream, audited
        a = d.agentc()
        assert a.lock("pw")
        ta_wait(lambda: 22 in up.types(), "the LOCK copy")
        ta_wait(lambda: [f["result"] for f in relay_lines(d, "lock")] == ["ok"], "the relay lock line")
        # locked: nothing but copies is relayed
        n = len(up.msgs)
        res = run_peer(d, [raw(sign_msg(RSA_BLOB, b"while locked")), raw(bytes([11]))])
        assert ta.ok(res[0]) == bytes([5]), res
        assert listed_blobs(ta.ok(res[1])) == [], res[1]
        time.sleep(0.3)
        assert len(up.msgs) == n, up.msgs[n:]
        locked = [f for f in relay_lines(d, "sign") if f["result"] == "locked"]
        assert locked and locked[-1]["uid"] == str(ta.PEER_UID) and locked[-1]["fp"] == RSA_FP, locked
        assert a.unlock("pw")
        ta_wait(lambda: 23 in up.types(), "the UNLOCK copy")
        a.close()
        res = run_peer(d, [raw(bytes([11]))])
        assert RSA_BLOB in listed_blobs(ta.ok(res[0])), res
    finally:
        d.stop()
        up.close()


def ta_wait(pred, what, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


TESTS = [test_upstream_only_for_admitted_peers, test_relayed_sign_audited_once, test_sigil_rules_first]


def main():
    assert "SIGILD" in os.environ, "SIGILD is not set"
    if os.geteuid() != 0:
        print(f"1..{len(TESTS)}", flush=True)
        for n, t in enumerate(TESTS, 1):
            print(f"not ok {n} - {t.__name__}\n# must run as root (setpriv)", flush=True)
        return 1
    return sigiltest.tap_in_tmp(TESTS, "sigil-upauth-", log_lines=20)


if __name__ == "__main__":
    sys.exit(main())
