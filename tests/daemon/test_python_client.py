#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_python_client.py - an independent sigild client on Python's msgpack.

Starts the real sigild (path in $SIGILD) on a temporary socket and state
directory, talks msgpack-rpc to it with the msgpack package (not sigil's
proto/ code), and checks its signatures and shared secrets with
pyca/cryptography. Output is TAP. Run with /usr/bin/python3 (Debian's
python3-msgpack and python3-cryptography).
"""
import atexit
import base64
import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey, Ed25519PublicKey)
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey, X25519PublicKey)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from sigiltest import NOENC, RAW, RAWPRIV, RAWPUB, Client, RpcError, clean_env, tap_run  # noqa: E402,F401



# Every sigild this script starts (and the pid of a detached one): whatever
# a test does, reap_daemons() kills those still running after each test and
# at exit, so a failed or timed-out test never leaves a sigild behind.
STARTED = []
STRAY_PIDS = []


def reap_daemons():
    for d in STARTED:
        if d.proc.poll() is None:
            d.proc.kill()
            try:
                d.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if not d.log.closed:
            d.log.close()
        shutil.rmtree(d.dir, ignore_errors=True)
    STARTED.clear()
    for pid in STRAY_PIDS:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    STRAY_PIDS.clear()


atexit.register(reap_daemons)


class Daemon:
    def __init__(self, args=("--foreground",), env=None, wait=True, owner=None, **popen):
        self.dir = tempfile.mkdtemp(prefix="sigil-pytest-")
        if owner is not None:
            os.chown(self.dir, owner, owner)
        self.sock = os.path.join(self.dir, "run", "sigild.sock")
        self.state = os.path.join(self.dir, "state")
        self.logpath = os.path.join(self.dir, "sigild.log")
        self.log = open(self.logpath, "wb")
        cmd = popen.pop("cmd", [])
        self.proc = subprocess.Popen(
            cmd + [os.environ["SIGILD"], "--socket", self.sock, "--state-dir", self.state,
                   "--workers", "2", *args],
            stdout=self.log, stderr=self.log, env=env or clean_env(), **popen)
        STARTED.append(self)
        if wait:
            self.wait_listening()

    def wait_listening(self):
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sigild exited with {self.proc.returncode}: {self.logtext()}")
            try:
                Client(self.sock).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("sigild did not start")

    def logtext(self):
        with open(self.logpath, "r", errors="replace") as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def ed_pub(priv):
    return priv.public_key().public_bytes(RAW, RAWPUB)


def test_hello(c):
    r = c.call("hello")
    assert r["protocol"] == 1
    assert r["server"].startswith("sigild ")
    assert "ed25519" in r["features"] and "x25519" in r["features"]


def test_sign_generated(c):
    key = c.call("key.generate", {"type": "ed25519", "label": "py-ed"})["key"]
    assert key["label"] == "py-ed" and key["type"] == "ed25519"
    pub = Ed25519PublicKey.from_public_bytes(key["public_key"])
    for n in (0, 1, 63, 64, 1000, 100000):
        msg = os.urandom(n)
        sig = c.call("sign", {"key": "py-ed", "message": msg})["signature"]
        assert isinstance(sig, bytes) and len(sig) == 64
        pub.verify(sig, msg)  # raises InvalidSignature on a bad signature
        try:
            pub.verify(sig, msg + b"x")
        except InvalidSignature:
            pass
        else:
            raise AssertionError("a signature verified for another message")


def test_sign_imported(c):
    priv = Ed25519PrivateKey.generate()
    seed = priv.private_bytes(RAW, RAWPRIV, NOENC)
    key = c.call("key.import", {"type": "ed25519", "label": "py-imp", "seed": seed})["key"]
    assert key["public_key"] == ed_pub(priv)
    msg = b"deterministic signatures must match"
    sig = c.call("sign", {"key": "py-imp", "message": msg})["signature"]
    assert sig == priv.sign(msg)


def test_fingerprint(c):
    key = c.call("key.public", {"label": "py-imp"})["key"]
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + key["public_key"]
    want = "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    assert key["fingerprint"] == want, (key["fingerprint"], want)
    keygen = shutil.which("ssh-keygen")
    assert keygen, "ssh-keygen (openssh-client) is required"
    with tempfile.NamedTemporaryFile("w", suffix=".pub") as f:
        f.write("ssh-ed25519 " + base64.b64encode(blob).decode() + " py-imp\n")
        f.flush()
        out = subprocess.run([keygen, "-l", "-f", f.name], capture_output=True, text=True, check=True).stdout
    assert out.split()[1] == key["fingerprint"], out


def test_verify(c):
    priv = Ed25519PrivateKey.generate()
    msg = b"signed by pyca/cryptography"
    sig = priv.sign(msg)
    pk = ed_pub(priv)
    assert c.call("verify", {"public_key": pk, "message": msg, "signature": sig})["valid"] is True
    bad = bytes([sig[0] ^ 1]) + sig[1:]
    assert c.call("verify", {"public_key": pk, "message": msg, "signature": bad})["valid"] is False
    items = []
    for i in range(10):
        p = Ed25519PrivateKey.generate()
        m = os.urandom(i * 7)
        items.append({"public_key": ed_pub(p), "message": m, "signature": p.sign(m)})
    items[3]["message"] += b"!"
    r = c.call("verify_batch", {"items": items, "policy": "zip215"})["valid"]
    assert r == [i != 3 for i in range(10)], r


def test_dh(c):
    key = c.call("key.generate", {"type": "x25519", "label": "py-x"})["key"]
    assert key["type"] == "x25519"
    mine = X25519PrivateKey.generate()
    peer = mine.public_key().public_bytes(RAW, RAWPUB)
    shared = c.call("dh", {"key": "py-x", "peer": peer})["shared_secret"]
    assert shared == mine.exchange(X25519PublicKey.from_public_bytes(key["public_key"]))
    # imported scalar: same public key as cryptography's
    other = X25519PrivateKey.generate()
    scalar = other.private_bytes(RAW, RAWPRIV, NOENC)
    k2 = c.call("key.import", {"type": "x25519", "label": "py-x2", "seed": scalar})["key"]
    assert k2["public_key"] == other.public_key().public_bytes(RAW, RAWPUB)
    s2 = c.call("dh", {"key": "py-x2", "peer": peer})["shared_secret"]
    assert s2 == other.exchange(mine.public_key())


def test_errors(c):
    cases = [
        ("key.public", {"label": "nope"}, "not_found"),
        ("sign", {"key": "py-x", "message": b"m"}, "wrong_type"),
        ("dh", {"key": "py-x", "peer": bytes(32)}, "invalid_key"),
        ("key.generate", {"type": "ed25519", "label": "py-ed"}, "exists"),
        ("sign", {"key": "py-ed", "message": "str, not bin"}, "bad_request"),
        ("key.generate", {"type": "ed25519", "label": "a/b"}, "bad_request"),
        ("frobnicate", {}, "unknown_method"),
    ]
    for method, params, code in cases:
        try:
            c.call(method, params)
        except RpcError as e:
            assert e.code == code, (method, e.code, code)
        else:
            raise AssertionError(f"{method} succeeded; expected {code}")


def test_pipelined(c):
    pub = Ed25519PublicKey.from_public_bytes(c.call("key.public", {"label": "py-ed"})["key"]["public_key"])
    msgs = {}
    for i in range(300):
        m = b"pipelined %d" % i
        msgs[c.send("sign" if i % 2 else "hello", {"key": "py-ed", "message": m})] = (i, m)
    seen = set()
    for _ in range(300):
        _, msgid, err, result = c.recv()
        assert err is None, err
        assert msgid in msgs and msgid not in seen
        seen.add(msgid)
        i, m = msgs[msgid]
        if i % 2:
            pub.verify(result["signature"], m)
        else:
            assert result["protocol"] == 1
    assert len(seen) == 300


def test_list_delete(c):
    labels = sorted(k["label"] for k in c.call("key.list")["keys"])
    assert labels == ["py-ed", "py-imp", "py-x", "py-x2"], labels
    for l in labels:
        assert c.call("key.delete", {"label": l}) == {}
    assert c.call("key.list")["keys"] == []


def bound_unix_socket(tmp, name, kind):
    """A Unix socket of kind bound to tmp/name: (path, socket)."""
    path = os.path.join(tmp, name)
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(path)
    return path, s


def recv_notify(ns, msgs, seconds, until=lambda: False):
    """Appends to msgs what reaches ns for seconds, or until until() holds."""
    deadline = time.time() + seconds
    while time.time() < deadline and not until():
        try:
            msgs.append(ns.recv(4096).decode())
        except socket.timeout:
            pass


def own_test_systemd_notify():
    """READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 reach $NOTIFY_SOCKET."""
    tmp = tempfile.mkdtemp(prefix="sigil-notify-")
    try:
        path, ns = bound_unix_socket(tmp, "notify", socket.SOCK_DGRAM)
        ns.settimeout(0.2)
        d = Daemon(args=(), env=clean_env(NOTIFY_SOCKET=path, WATCHDOG_USEC="200000"))
        msgs = []
        recv_notify(ns, msgs, 1.0)
        c = Client(d.sock)
        c.call("key.generate", {"type": "ed25519", "label": "n"})
        c.close()
        recv_notify(ns, msgs, 2.5, until=lambda: any("1 keys" in m for m in msgs))
        rc = d.stop()
        try:
            while True:
                msgs.append(ns.recv(4096).decode())
        except socket.timeout:
            pass
        text = "\n".join(msgs)
        assert rc == 0, rc
        assert "READY=1" in text, text
        assert "WATCHDOG=1" in text, text
        assert any(m.startswith("STATUS=") and "1 keys" in m for m in msgs), text
        assert "STOPPING=1" in text, text
        assert text.count("WATCHDOG=1") >= 3, text  # every 100 ms for ~1 s
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def own_test_socket_activation():
    """sigild listens on the socket passed as fd 3 (LISTEN_FDS=1)."""
    tmp = tempfile.mkdtemp(prefix="sigil-act-")
    try:
        path, ls = bound_unix_socket(tmp, "activated.sock", socket.SOCK_STREAM)
        ls.listen(16)
        fd = ls.fileno()

        def as_fd3():
            if fd != 3:
                os.dup2(fd, 3)
            os.set_inheritable(3, True)

        d = Daemon(args=("--foreground",), env=clean_env(LISTEN_FDS="1"), wait=False,
                   cmd=["/bin/sh", "-c", 'LISTEN_PID=$$; export LISTEN_PID; exec "$@"', "sh"],
                   close_fds=False, preexec_fn=as_fd3)
        ls.close()
        deadline = time.time() + 15
        while "listening" not in d.logtext() and time.time() < deadline:
            assert d.proc.poll() is None, d.logtext()
            time.sleep(0.01)
        c = Client(path)
        assert c.call("hello")["protocol"] == 1
        c.close()
        assert "socket passed by systemd" in d.logtext(), d.logtext()
        assert not os.path.exists(d.sock), "sigild bound its own socket"
        assert d.stop() == 0
        assert os.path.exists(path), "sigild removed the socket systemd owns"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def own_test_detach():
    """Without --foreground, sigild detaches once listening."""
    d = Daemon(args=(), wait=False)
    rc = d.proc.wait(15)
    assert rc == 0, (rc, d.logtext())
    c = Client(d.sock)
    creds = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid = struct.unpack("3i", creds)[0]
    STRAY_PIDS.append(pid)
    assert pid != d.proc.pid
    assert c.call("hello")["protocol"] == 1
    c.close()
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the detached sigild did not stop")
    STRAY_PIDS.remove(pid)  # gone: its pid may be reused
    assert "stopped" in d.logtext(), d.logtext()
    d.log.close()
    shutil.rmtree(d.dir, ignore_errors=True)


def own_test_mlock_refused():
    """Without lockable memory sigild refuses to start, naming RLIMIT_MEMLOCK."""
    import resource
    assert os.geteuid() == 0, "this test must run as root (it runs sigild as uid 65534)"

    def nobody():
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (0, 0))
        os.setgroups([])
        os.setresgid(65534, 65534, 65534)
        os.setresuid(65534, 65534, 65534)

    for allow in (False, True):
        d = Daemon(args=("--foreground",) + (("--allow-unlocked-memory",) if allow else ()),
                   wait=False, owner=65534, preexec_fn=nobody)
        if not allow:
            rc = d.proc.wait(15)
            assert rc == 1, (rc, d.logtext())
            assert "RLIMIT_MEMLOCK" in d.logtext(), d.logtext()
            d.log.close()
            shutil.rmtree(d.dir, ignore_errors=True)
        else:
            d.wait_listening()
            c = Client(d.sock)
            c.call("key.generate", {"type": "ed25519", "label": "unlocked"})
            c.close()
            # PR_SET_DUMPABLE 0: the kernel gives a non-dumpable process's
            # /proc/<pid> files to root although it runs as uid 65534
            st = os.stat(f"/proc/{d.proc.pid}/status")
            assert st.st_uid == 0, st
            assert "mlock failed" in d.logtext(), d.logtext()
            assert d.stop() == 0


def own_test_secmem():
    """Keys sit in locked, no-dump mappings between guard pages; no core dumps."""
    d = Daemon()
    try:
        c = Client(d.sock)
        for i in range(3):
            c.call("key.generate", {"type": "ed25519" if i % 2 else "x25519", "label": f"mem{i}"})
        c.close()
        pid = d.proc.pid
        vmas = []
        with open(f"/proc/{pid}/smaps") as f:
            cur = None
            for line in f:
                parts = line.split()
                if "-" in parts[0] and len(parts) >= 5 and ":" not in parts[0]:
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    cur = {"start": start, "end": end, "perms": parts[1]}
                    vmas.append(cur)
                elif parts[0] == "VmFlags:":
                    cur["flags"] = set(parts[1:])
                elif parts[0] == "Locked:":
                    cur["locked_kb"] = int(parts[1])
        secret = [v for v in vmas if {"lo", "dd"} <= v.get("flags", set()) and v["perms"].startswith("rw")]
        assert len(secret) >= 3, secret
        by_start = {v["start"]: v for v in vmas}
        by_end = {v["end"]: v for v in vmas}
        for v in secret:
            assert v["locked_kb"] > 0, v
            before, after = by_end.get(v["start"]), by_start.get(v["end"])
            assert before and before["perms"].startswith("---"), ("no guard page below", v)
            assert after and after["perms"].startswith("---"), ("no guard page above", v)
        with open(f"/proc/{pid}/limits") as f:
            core = [l for l in f if l.startswith("Max core file size")][0].split()
        assert core[4] == "0" and core[5] == "0", core
        # PR_SET_DUMPABLE 0 is checked in own_test_mlock_refused, where
        # sigild runs as another uid than root
    finally:
        assert d.stop() == 0


OWN_TESTS = [own_test_systemd_notify, own_test_socket_activation, own_test_detach]

# Sanitizer runtimes (ASan, TSan) replace mlock() with a no-op, so neither
# locked mappings nor an mlock failure can be observed: meson registers
# these as their own test ("--part mlock") only in builds without
# b_sanitize; the main test ("--part main") never runs them.
MLOCK_TESTS = [own_test_secmem, own_test_mlock_refused]

MAIN_SOCK = []  # the shared daemon's socket (main)


def test_long_messages_off_the_loop(c):
    """A 32 MiB verify and a 32 MiB sign run on the crypto workers (issue
    18): another connection's sign, sent once the long request has been
    read, is answered before it; every answer is right."""
    import select
    other = Client(MAIN_SOCK[0])
    try:
        other.call("key.generate", {"type": "ed25519", "label": "py-long"})
        pub = Ed25519PublicKey.from_public_bytes(c.call("key.public", {"label": "py-long"})["key"]["public_key"])
        priv = Ed25519PrivateKey.generate()
        big = os.urandom(32 << 20)
        cases = [("verify", {"public_key": priv.public_key().public_bytes(RAW, RAWPUB), "message": big,
                             "signature": priv.sign(big)}),
                 ("sign", {"key": "py-long", "message": big})]
        for method, params in cases:
            first = None
            mid = c.send(method, params)
            oid = other.send("sign", {"key": "py-long", "message": b"short"})
            got = {}
            while len(got) < 2:
                ready, _, _ = select.select([c.sock, other.sock], [], [], 30)
                assert ready, "no answer within 30 s"
                who = c if c.sock in ready else other
                _, rid, err, res = who.recv()
                assert err is None, err
                got[who] = res
                first = first or who
            assert first is other, f"the short sign waited for the {method} of 32 MiB"
            pub.verify(got[other]["signature"], b"short")
            if method == "verify":
                assert got[c]["valid"] is True
            else:
                pub.verify(got[c]["signature"], big)
        c.call("key.delete", {"label": "py-long"})
    finally:
        other.close()


TESTS = [test_hello, test_sign_generated, test_sign_imported, test_fingerprint, test_verify,
         test_dh, test_errors, test_pipelined, test_list_delete, test_long_messages_off_the_loop]


def run_own(tests, first):
    failed = 0
    for n, t in enumerate(tests, first):
        try:
            if not tap_run(n, t):
                failed += 1
        finally:
            reap_daemons()
    return failed


def main():
    part = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--part" else None
    if part not in ("main", "mlock"):
        print("usage: test_python_client.py --part main|mlock", file=sys.stderr)
        return 2
    sanitize = os.environ.get("SIGIL_SANITIZE", "")
    if part == "mlock":
        if sanitize not in ("", "none"):
            print(f"Bail out! --part mlock cannot observe mlock in a b_sanitize={sanitize} build")
            return 1
        print(f"1..{len(MLOCK_TESTS)}", flush=True)
        return 1 if run_own(MLOCK_TESTS, 1) else 0
    print(f"1..{len(TESTS) + 1 + len(OWN_TESTS)}", flush=True)
    failed = 0
    d = Daemon()
    MAIN_SOCK.append(d.sock)
    c = Client(d.sock)
    for n, t in enumerate(TESTS, 1):
        if not tap_run(n, t, c):
            failed += 1
    c.close()
    try:
        rc = d.stop()
    except subprocess.TimeoutExpired:
        rc = "a timeout"
    if rc == 0:
        print(f"ok {len(TESTS) + 1} - sigild exits 0 on SIGTERM", flush=True)
    else:
        failed += 1
        print(f"not ok {len(TESTS) + 1} - sigild exited with {rc} on SIGTERM", flush=True)
    reap_daemons()
    failed += run_own(OWN_TESTS, len(TESTS) + 2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
