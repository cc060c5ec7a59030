#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_keystore_churn.py - keystore mutations from the loop while the pool
holds the keystore (issue 16, defect 6), for ThreadSanitizer.

The real sigild ($SIGILD, passphrase mode) on a temporary socket and state
directory. Three client threads at once, for several rounds:
  - agent: ssh-adds keys with a 1 s lifetime (they expire while the others
    run), and keys without one that it removes again (REMOVE_IDENTITY);
  - keys: key.import and key.delete of throw-away keys on the main socket;
  - admin: rekey (a new passphrase), lock, unlock (Argon2id and the key
    files on the worker pool, the keystore held by the core).
Then sigild is stopped: it must exit 0 and its log must hold no
ThreadSanitizer report (in a -Db_sanitize=thread build, TSan reports a race
and halt_on_error=1 ends sigild); then it is started again, unlocked with
the last passphrase, and every persisted key must still open (no
"refusing keys/NAME.key", every key file listed, each signs).

Registered in the daemon suite, which CI runs under -Db_sanitize=thread with
clang; without a sanitizer it still checks that no key is lost. Output is
TAP.
"""
import os
import signal
import subprocess
import sys
import threading
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import sigiltest  # noqa: E402
from agentproto import Agent, new_key  # noqa: E402
from sigiltest import RAW, RAWPRIV, RAWPUB, NOENC, RpcError  # noqa: E402,F401

FAST_PW = ["--pwhash-ops", "1", "--pwhash-mem", "8"]
ROUNDS = 4
ROUND_S = 2.5
PERSISTED = 12


def tsan_env():
    """sigild's environment: TSan's options unless the caller set them
    (the libuv descriptor suppressions, halt on the first report)."""
    extra = {}
    if os.environ.get("SIGIL_SANITIZE", "none") == "thread" and "TSAN_OPTIONS" not in os.environ:
        supp = os.path.join(os.environ.get("SIGIL_SOURCE_ROOT", os.path.join(HERE, "..", "..")),
                            "tests", "fuzz", "tsan-libuv.supp")
        extra["TSAN_OPTIONS"] = f"suppressions={supp} halt_on_error=1"
    return sigiltest.clean_env(drop=("CREDENTIALS_DIRECTORY", "SSH_AUTH_SOCK"), **extra)


class Daemon:
    def __init__(self, root):
        self.sock = os.path.join(root, "sigild.sock")
        self.agent = os.path.join(root, "ssh-agent.sock")
        self.state = os.path.join(root, "state")
        self.conf = os.path.join(root, "sigil.conf")
        self.logpath = os.path.join(root, "sigild.log")
        with open(self.conf, "w") as f:
            f.write("")
        self.proc = None

    def start(self):
        with open(self.logpath, "ab") as log:
            log.write(b"---- start\n")
            log.flush()
            self.proc = subprocess.Popen(
                [os.environ["SIGILD"], "--foreground", "--socket", self.sock, "--ssh-agent-socket", self.agent,
                 "--state-dir", self.state, "--config", self.conf, "--workers", "2", "--passphrase", *FAST_PW],
                stdout=log, stderr=log, env=tsan_env())
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sigild exited with {self.proc.returncode}: {self.lastlog()[-3000:]}")
            try:
                sigiltest.Client(self.sock).close()
                Agent(self.agent).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("sigild did not start")

    def stop(self):
        """SIGTERM; the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(20)
        rc = self.proc.returncode
        self.proc = None
        return rc

    def lastlog(self):
        with open(self.logpath, "r", errors="replace") as f:
            return f.read().rsplit("---- start\n", 1)[-1]


def tsan_report(log):
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "ThreadSanitizer" in line:
            return "\n".join(lines[i:i + 40])
    return None


def verify(pk, sig, msg):
    try:
        Ed25519PublicKey.from_public_bytes(pk).verify(sig, msg)
        return True
    except Exception:
        return False


def import_key(c, label):
    priv, seed, pk = new_key()
    c.call("key.import", {"type": "ed25519", "label": label, "seed": seed})
    return pk


class Worker(threading.Thread):
    """Runs fn(stop) until stop is set; keeps the first exception."""

    def __init__(self, name, fn, stop):
        super().__init__(name=name, daemon=True)
        self.fn = fn
        self.stop_ev = stop
        self.error = None
        self.count = 0

    def run(self):
        try:
            while not self.stop_ev.is_set():
                self.fn(self)
                self.count += 1
        except Exception as e:  # noqa: BLE001
            import traceback
            self.error = f"{self.name}: {e!r}\n{traceback.format_exc()}"
            self.stop_ev.set()


def test_churn_during_rekey_and_unlock(tmp):
    d = Daemon(tmp).start()
    c = sigiltest.Client(d.sock)
    pw = ["churn-0"]
    c.call("unlock", {"passphrase": pw[0]})
    persisted = {f"p{i:02d}": import_key(c, f"p{i:02d}") for i in range(PERSISTED)}
    c.close()

    for rnd in range(ROUNDS):
        stop = threading.Event()
        a = Agent(d.agent)
        kc = sigiltest.Client(d.sock)
        ac = sigiltest.Client(d.sock)
        state = {"n": 0}

        def agent_step(w):
            # a key that expires in 1 s, then one added and removed
            _, s1, p1 = new_key()
            a.add(s1, p1, f"life-{rnd}-{w.count}", lifetime=1)
            _, s2, p2 = new_key()
            if a.add(s2, p2, f"tmp-{rnd}-{w.count}"):
                a.remove(p2)
            time.sleep(0.01)

        def keys_step(w):
            label = f"k{rnd}-{w.count}"
            try:
                import_key(kc, label)
            except RpcError as e:
                assert e.code in ("locked", "busy"), e
                time.sleep(0.01)
                return
            try:
                kc.call("key.delete", {"label": label})
            except RpcError as e:
                assert e.code in ("locked", "busy"), e
                # left in the keystore: it must survive like the others

        def admin_step(w):
            n = state["n"]
            state["n"] += 1
            # lock drops memory-only keys: only in the first half of the
            # round, so that the later lifetimes run out (during rekeys)
            if n % 3 == 2 and time.monotonic() < end - ROUND_S / 2:
                ac.call("lock")
                ac.call("unlock", {"passphrase": pw[0]})
            else:
                new = f"churn-{rnd}-{n}"
                try:
                    ac.call("rekey", {"passphrase": new})
                    pw[0] = new
                except RpcError as e:
                    assert e.code == "busy", e

        workers = [Worker("agent", agent_step, stop), Worker("keys", keys_step, stop),
                   Worker("admin", admin_step, stop)]
        end = time.monotonic() + ROUND_S
        for w in workers:
            w.start()
        while time.monotonic() < end and not stop.is_set():
            time.sleep(0.05)
        stop.set()
        for w in workers:
            w.join(60)
            assert not w.is_alive(), f"{w.name} did not finish (sigild stopped answering?)"
        if any(w.error for w in workers):
            # sigild ended by TSan (halt_on_error) shows as a lost connection
            rep = tsan_report(d.lastlog())
            assert rep is None, f"round {rnd}: ThreadSanitizer report:\n{rep}"
        for w in workers:
            assert w.error is None, w.error
        assert all(w.count > 0 for w in workers), [(w.name, w.count) for w in workers]
        print(f"# round {rnd}: " + ", ".join(f"{w.name} {w.count} steps" for w in workers), flush=True)
        # let the last lifetimes run out
        time.sleep(1.2)
        for x in (a, kc, ac):
            x.close()
        rc = d.stop()
        log = d.lastlog()
        rep = tsan_report(log)
        assert rep is None, f"round {rnd}: ThreadSanitizer report:\n{rep}"
        assert rc == 0, f"round {rnd}: sigild exited with {rc}: {log[-2000:]}"
        # the round did what it is for: lifetimes ran out, keys were
        # removed and deleted, the keystore was rekeyed and unlocked
        for what in ("expired (lifetime constraint)", "op=ssh-remove result=ok", "op=delete result=ok",
                     "op=rekey result=ok", "op=unlock result=ok"):
            assert what in log, f"round {rnd}: no '{what}' in sigild's log"

        d.start()
        c = sigiltest.Client(d.sock)
        c.call("unlock", {"passphrase": pw[0]})
        log = d.lastlog()
        assert "refusing" not in log, f"round {rnd}: " + "\n".join(x for x in log.splitlines() if "refusing" in x)
        listed = {k["label"] for k in c.call("key.list")["keys"]}
        files = {f[:-4] for f in os.listdir(os.path.join(d.state, "keys")) if f.endswith(".key")}
        assert files <= listed, f"round {rnd}: key files not opened: {sorted(files - listed)}"
        for label, pk in persisted.items():
            msg = f"round {rnd} {label}".encode()
            try:
                sig = c.call("sign", {"key": label, "message": msg})["signature"]
            except RpcError as e:
                raise AssertionError(f"round {rnd}: persisted key {label} lost: {e}")
            assert verify(pk, sig, msg), f"round {rnd}: {label} signs with another key"
        c.close()
    rc = d.stop()
    rep = tsan_report(d.lastlog())
    assert rep is None, f"ThreadSanitizer report:\n{rep}"
    assert rc == 0, rc


def test_sign_storm_during_lock_and_delete(tmp):
    """Issue 18: signatures on the workers while keys are deleted and the
    keystore is locked and unlocked: every signature returned is made by
    the key its label names, none after the key is gone, no race (TSan)."""
    d = Daemon(tmp).start()
    c = sigiltest.Client(d.sock)
    c.call("unlock", {"passphrase": "storm"})
    pks = {"storm": import_key(c, "storm")}
    gen = {"n": 0, "label": None}

    def new_victim():
        label = f"victim-{gen['n']}"
        gen["n"] += 1
        pks[label] = import_key(c, label)
        gen["label"] = label

    new_victim()
    stop = threading.Event()
    seen = {"ok": 0, "locked": 0, "gone": 0}
    lock = threading.Lock()

    def signer_fn():
        sc = sigiltest.Client(d.sock)

        def step(w):
            for label in ("storm", gen["label"]):
                msg = f"{w.name} {w.count} {label}".encode()
                try:
                    sig = sc.call("sign", {"key": label, "message": msg})["signature"]
                except RpcError as e:
                    assert e.code in ("locked", "not_found", "busy"), e
                    with lock:
                        seen["locked" if e.code == "locked" else "gone"] += 1
                    continue
                assert verify(pks[label], sig, msg), f"{label}: a signature by another key"
                with lock:
                    seen["ok"] += 1
        return step

    ac = sigiltest.Client(d.sock)

    def admin_step(w):
        time.sleep(0.05)
        if w.count % 2 == 0:
            ac.call("lock")
            time.sleep(0.02)
            ac.call("unlock", {"passphrase": "storm"})
        else:
            old = gen["label"]
            new_victim()
            try:
                c.call("key.delete", {"label": old})
            except RpcError as e:
                assert e.code == "busy", e

    workers = [Worker(f"signer{i}", signer_fn(), stop) for i in range(6)] + [Worker("admin", admin_step, stop)]
    for w in workers:
        w.start()
    end = time.monotonic() + 3.0
    while time.monotonic() < end and not stop.is_set():
        time.sleep(0.05)
    stop.set()
    for w in workers:
        w.join(60)
        assert not w.is_alive(), f"{w.name} did not finish (sigild stopped answering?)"
    rep = tsan_report(d.lastlog())
    assert rep is None, f"ThreadSanitizer report:\n{rep}"
    for w in workers:
        assert w.error is None, w.error
    print(f"# signatures {seen['ok']}, refused while locked {seen['locked']}, deleted key {seen['gone']}, "
          f"admin steps {workers[-1].count}", flush=True)
    assert seen["ok"] > 100 and seen["locked"] > 0, seen
    ac.close()
    c.close()
    rc = d.stop()
    rep = tsan_report(d.lastlog())
    assert rep is None, f"ThreadSanitizer report:\n{rep}"
    assert rc == 0, rc
    log = d.lastlog()
    for what in ("op=delete result=ok", "op=lock result=ok", "op=unlock result=ok"):
        assert what in log, f"no '{what}' in sigild's log"


TESTS = [test_churn_during_rekey_and_unlock, test_sign_storm_during_lock_and_delete]


def main():
    assert "SIGILD" in os.environ, "SIGILD is not set"
    return sigiltest.tap_in_tmp(TESTS, "sigil-churn-")


if __name__ == "__main__":
    sys.exit(main())
