#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_atrest.py - keys at rest in sigild (issue 6, docs/security.md).

Starts the real sigild ($SIGILD) on temporary directories and checks, with
an independent msgpack client and pyca/cryptography: restart keeps every
key; a changed file or header is refused and the other keys still load; no
state file holds an imported seed in plain form; format 1 files are sealed
on load; each master key source (generated, --master-key-file, systemd
credential, passphrase, --ephemeral); lock wipes and unlock re-opens; a
wrong passphrase or master key is refused and nothing is lost; kill -9
during a storm of generations and deletions (50 rounds); ENOSPC on a small
tmpfs. Output is TAP. Runs as root (tmpfs mount).
"""
import glob
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import sigiltest  # noqa: E402
from sigiltest import NOENC, RAW, RAWPRIV, RAWPUB, RpcError  # noqa: E402,F401

# fast Argon2id for tests (the default is libsodium's INTERACTIVE)
FAST_PW = ["--pwhash-ops", "1", "--pwhash-mem", "8"]


class Client(sigiltest.Client):
    # this test has always taken each response as it came
    strict = False


def clean_env(**extra):
    return sigiltest.clean_env(drop=("CREDENTIALS_DIRECTORY",), **extra)


class Daemon:
    """sigild on <root>/state; start() again after stop() or kill() reuses the state."""

    def __init__(self, root, args=(), env=None, state=None):
        self.root = root
        self.sock = os.path.join(root, "run", "sigild.sock")
        self.state = state or os.path.join(root, "state")
        self.logpath = os.path.join(root, "sigild.log")
        self.args = list(args)
        self.env = env
        self.proc = None

    def start(self, args=None, env=None, expect_exit=False):
        log = open(self.logpath, "ab")
        log.write(b"---- start\n")
        log.flush()
        self.proc = subprocess.Popen(
            [os.environ["SIGILD"], "--foreground", "--socket", self.sock, "--state-dir", self.state,
             "--workers", "2", *(self.args if args is None else args)],
            stdout=log, stderr=log, env=env or self.env or clean_env())
        log.close()
        if expect_exit:
            return self.proc.wait(20)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sigild exited with {self.proc.returncode}: {self.logtext()[-2000:]}")
            try:
                Client(self.sock).close()
                return self
            except OSError:
                time.sleep(0.005)
        raise RuntimeError("sigild did not start")

    def client(self):
        return Client(self.sock)

    def logtext(self):
        with open(self.logpath, "r", errors="replace") as f:
            return f.read()

    def lastlog(self):
        return self.logtext().rsplit("---- start\n", 1)[-1]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(20)
        assert rc == 0, f"sigild exited with {rc}: {self.lastlog()[-2000:]}"

    def kill(self):
        self.proc.kill()
        self.proc.wait(20)

    def restart(self, **kw):
        self.stop()
        return self.start(**kw)


def keyfiles(d):
    return sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(d.state, "keys", "*.key")))


def all_state_bytes(d):
    out = []
    for dirpath, _, files in os.walk(d.state):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                out.append((os.path.join(dirpath, f), fh.read()))
    return out


def import_ed(c, label):
    priv = Ed25519PrivateKey.generate()
    seed = priv.private_bytes(RAW, RAWPRIV, NOENC)
    k = c.call("key.import", {"type": "ed25519", "label": label, "seed": seed})["key"]
    assert k["public_key"] == priv.public_key().public_bytes(RAW, RAWPUB)
    return priv, seed


def check_sign(c, label, priv):
    msg = os.urandom(40)
    sig = c.call("sign", {"key": label, "message": msg})["signature"]
    assert sig == priv.sign(msg)


def test_restart_keeps_keys_and_no_plain_seed(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    privs = {f"imp{i}": import_ed(c, f"imp{i}") for i in range(3)}
    xs = X25519PrivateKey.generate()
    xseed = xs.private_bytes(RAW, RAWPRIV, NOENC)
    c.call("key.import", {"type": "x25519", "label": "ximp", "seed": xseed})
    c.call("key.generate", {"type": "ed25519", "label": "gen"})
    before = {k["label"]: k for k in c.call("key.list")["keys"]}
    c.close()
    d.restart()
    c = d.client()
    after = {k["label"]: k for k in c.call("key.list")["keys"]}
    assert before == after, (before, after)
    for label, (priv, _) in privs.items():
        check_sign(c, label, priv)
    peer = X25519PrivateKey.generate()
    shared = c.call("dh", {"key": "ximp", "peer": peer.public_key().public_bytes(RAW, RAWPUB)})["shared_secret"]
    assert shared == peer.exchange(xs.public_key())
    c.close()
    assert "master key: generated master key" in d.lastlog()
    assert "at-rest protection is only file permissions" in d.logtext()
    d.stop()
    seeds = [s for _, s in privs.values()] + [xseed]
    files = all_state_bytes(d)
    assert any(p.endswith("master.key") for p, _ in files)
    for path, data in files:
        for s in seeds:
            for form in (s, s.hex().encode(), s.hex().upper().encode()):
                assert form not in data, f"{path} holds a seed in plain form"
    for path, data in files:
        if path.endswith(".key") and "/keys/" in path:
            assert data[:9] == b"SIGILKEY\x02", path
            assert os.stat(path).st_mode & 0o777 == 0o600


def test_tampered_files_refused(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    keep, _ = import_ed(c, "keep")
    for label in ("hdr", "body", "label", "pub"):
        import_ed(c, label)
    c.close()
    d.stop()
    kd = os.path.join(d.state, "keys")

    def flip(label, off):
        p = os.path.join(kd, label + ".key")
        b = bytearray(open(p, "rb").read())
        b[off if off >= 0 else len(b) + off] ^= 1
        open(p, "wb").write(b)
    flip("hdr", 10)      # flags: exportable bit (authenticated header)
    flip("body", -5)     # the tag
    flip("pub", 25)      # the public key in the header
    flip("label", 13)    # created time
    d.start()
    c = d.client()
    labels = sorted(k["label"] for k in c.call("key.list")["keys"])
    assert labels == ["keep"], labels
    check_sign(c, "keep", keep)
    log = d.lastlog()
    for label in ("hdr", "body", "label", "pub"):
        assert f"refusing keys/{label}.key: it does not open under the master key" in log, log
    # a refused file keeps its label: nothing overwrites it
    c.expect_error("exists", "key.generate", {"type": "ed25519", "label": "hdr"})
    c.close()
    d.stop()
    assert os.path.exists(os.path.join(kd, "hdr.key"))


def v1_file(label, seed, typ=0, exportable=False, created=1700000000):
    lb = label.encode()
    return b"SIGILKEY" + bytes([1, typ, 1 if exportable else 0, len(lb)]) + struct.pack(">q", created) + lb + seed


def test_format1_migrated(tmp):
    state = os.path.join(tmp, "state")
    os.makedirs(os.path.join(state, "keys"), mode=0o700)
    os.chmod(state, 0o700)
    priv = Ed25519PrivateKey.generate()
    seed = priv.private_bytes(RAW, RAWPRIV, NOENC)
    p = os.path.join(state, "keys", "old.key")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, v1_file("old", seed))
    os.close(fd)
    d = Daemon(tmp).start()
    c = d.client()
    k = c.call("key.public", {"label": "old"})["key"]
    assert k["created"] == 1700000000
    check_sign(c, "old", priv)
    c.close()
    assert "sealed keys/old.key: it was in format 1" in d.lastlog()
    data = open(p, "rb").read()
    assert data[:9] == b"SIGILKEY\x02" and seed not in data
    d.restart()
    c = d.client()
    check_sign(c, "old", priv)
    c.close()
    assert "format 1" not in d.lastlog()
    d.stop()


def test_lock_wipes_and_unlock_reopens(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    priv, _ = import_ed(c, "k")
    c.call("key.generate", {"type": "x25519", "label": "x"})
    c.call("lock")
    assert c.call("status")["locked"] is True
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    c.expect_error("locked", "dh", {"key": "x", "peer": bytes(range(1, 33))})
    c.expect_error("locked", "key.generate", {"type": "ed25519", "label": "n"})
    # public data stays available
    assert len(c.call("key.list")["keys"]) == 2
    assert c.call("key.public", {"label": "k"})["key"]["label"] == "k"
    # the decrypted seed is gone from the process: look for it in its memory
    c.call("unlock")
    assert c.call("status")["locked"] is False
    check_sign(c, "k", priv)
    c.call("key.generate", {"type": "ed25519", "label": "n"})
    c.close()
    d.stop()


def proc_memory_has(pid, needle):
    """True if any readable mapping of pid contains needle."""
    found = False
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "r" not in perms:
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if hi - lo > (256 << 20):
                continue
            try:
                mem.seek(lo)
                chunk = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            if needle in chunk:
                found = True
                break
    return found


def test_lock_leaves_no_seed_in_memory(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    priv, seed = import_ed(c, "k")
    check_sign(c, "k", priv)
    assert proc_memory_has(d.proc.pid, seed), "the probe cannot see the unlocked seed"
    c.call("lock")
    assert not proc_memory_has(d.proc.pid, seed), "the seed is still in sigild's memory after lock"
    c.call("unlock")
    check_sign(c, "k", priv)
    c.close()
    d.stop()


def test_master_key_file(tmp):
    mk = os.path.join(tmp, "mk")
    with open(mk, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(mk, 0o600)  # key material: group and others may not read it (docs/security.md)
    d = Daemon(tmp, args=["--master-key-file", mk]).start()
    c = d.client()
    priv, _ = import_ed(c, "k")
    c.close()
    d.stop()
    assert not os.path.exists(os.path.join(d.state, "master.key"))
    assert "master key: master key file" in d.lastlog()
    # another master key opens nothing: refused, and nothing is lost
    other = os.path.join(tmp, "other")
    with open(other, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(other, 0o600)
    d.start(args=["--master-key-file", other])
    c = d.client()
    assert c.call("key.list")["keys"] == []
    c.close()
    assert "no key file opens under the master key" in d.lastlog()
    d.stop()
    # a malformed master key file: a clear error, no start
    bad = os.path.join(tmp, "bad")
    with open(bad, "w") as f:
        f.write("short\n")
    os.chmod(bad, 0o600)
    assert d.start(args=["--master-key-file", bad], expect_exit=True) != 0
    assert "is not 32 bytes nor 64 hex digits" in d.lastlog()
    d.start(args=["--master-key-file", mk])
    c = d.client()
    check_sign(c, "k", priv)
    # lock forgets the master key; unlock reads the file again
    c.call("lock")
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    c.call("unlock")
    check_sign(c, "k", priv)
    c.close()
    d.stop()


def test_systemd_credential(tmp):
    cred = os.path.join(tmp, "creds")
    os.mkdir(cred, 0o700)
    with open(os.path.join(cred, "master-key"), "wb") as f:
        f.write(os.urandom(32))
    os.chmod(os.path.join(cred, "master-key"), 0o400)  # as systemd makes it
    env = clean_env(CREDENTIALS_DIRECTORY=cred)
    # the credential wins over --master-key-file
    unused = os.path.join(tmp, "unused")
    d = Daemon(tmp, args=["--master-key-file", unused], env=env).start()
    c = d.client()
    priv, _ = import_ed(c, "k")
    c.close()
    assert "master key: systemd credential" in d.lastlog()
    d.restart()
    c = d.client()
    check_sign(c, "k", priv)
    c.close()
    d.stop()
    assert not os.path.exists(os.path.join(d.state, "master.key"))


def test_passphrase(tmp):
    d = Daemon(tmp, args=["--passphrase", *FAST_PW]).start()
    c = d.client()
    assert c.call("status")["locked"] is True
    c.expect_error("locked", "key.generate", {"type": "ed25519", "label": "k"})
    c.expect_error("denied", "unlock")  # no passphrase given
    c.call("unlock", {"passphrase": "correct horse"})  # the first unlock sets it
    priv, _ = import_ed(c, "k")
    c.close()
    d.stop()
    assert os.path.exists(os.path.join(d.state, "passphrase.params"))
    assert not os.path.exists(os.path.join(d.state, "master.key"))
    # a restart (without --passphrase: the parameter file says so) starts locked
    d.start(args=FAST_PW)
    c = d.client()
    assert c.call("status")["locked"] is True
    assert [k["label"] for k in c.call("key.list")["keys"]] == ["k"]
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    msg = c.expect_error("denied", "unlock", {"passphrase": "wrong horse"})
    assert "wrong passphrase" in msg
    assert c.call("status")["locked"] is True
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    c.call("unlock", {"passphrase": "correct horse"})
    check_sign(c, "k", priv)
    c.call("lock")
    c.expect_error("denied", "unlock", {"passphrase": "wrong horse"})
    c.call("unlock", {"passphrase": "correct horse"})
    check_sign(c, "k", priv)
    c.close()
    d.stop()
    assert os.path.exists(os.path.join(d.state, "keys", "k.key"))


def test_ephemeral(tmp):
    d = Daemon(tmp, args=["--ephemeral"]).start()
    c = d.client()
    priv, _ = import_ed(c, "k")
    check_sign(c, "k", priv)
    c.call("lock")  # nothing to re-open from: the keys stay
    c.call("unlock")
    check_sign(c, "k", priv)
    c.close()
    assert "--ephemeral" in d.lastlog()
    assert not os.path.exists(os.path.join(d.state, "keys", "k.key"))
    d.restart()
    c = d.client()
    assert c.call("key.list")["keys"] == []
    c.close()
    d.stop()


def test_kill9_storm(tmp):
    """kill -9 at random moments during generations and deletions, 50 times:
    every acknowledged key opens after the restart and no file is half-written."""
    rnd = random.Random(int.from_bytes(os.urandom(8), "little"))
    d = Daemon(tmp)
    present = {}  # label -> public key, acknowledged
    serial = 0
    for rnd_i in range(50):
        d.start()
        c = d.client()
        listed = {k["label"]: k["public_key"] for k in c.call("key.list")["keys"]}
        for label, pk in present.items():
            assert listed.get(label) == pk, (rnd_i, label)
        for label in listed:
            if label not in present:
                present[label] = listed[label]  # generated, killed before the answer
        for label in list(present)[:]:
            if label in listed:
                check = c.call("key.public", {"label": label})["key"]
                assert check["public_key"] == present[label]
        # every key really opens: sign with each ed25519 one
        for k in c.call("key.list")["keys"]:
            if k["type"] == "ed25519":
                pub = Ed25519PublicKey.from_public_bytes(k["public_key"])
                pub.verify(c.call("sign", {"key": k["label"], "message": b"x"})["signature"], b"x")
        # the storm: pipelined, answers read as they come, kill at a random moment
        deadline = time.time() + rnd.uniform(0.005, 0.06)
        pending = {}
        while time.time() < deadline:
            if present and rnd.random() < 0.4:
                label = rnd.choice(list(present))
                pending[c.send("key.delete", {"label": label})] = ("del", label)
            else:
                serial += 1
                label = f"s{serial}"
                pending[c.send("key.generate", {"type": "ed25519", "label": label})] = ("gen", label)
            c.sock.setblocking(False)
            try:
                data = c.sock.recv(65536)
                c.unpacker.feed(data)
            except BlockingIOError:
                pass
            c.sock.setblocking(True)
            for obj in c.unpacker:
                _, mid, err, result = obj
                op, label = pending.pop(mid)
                if err is None and op == "gen":
                    present[label] = result["key"]["public_key"]
                elif err is None and op == "del":
                    present.pop(label, None)
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(20)
        c.close()
        # deletions in flight may or may not have happened; generations in
        # flight may have: the next round's list settles both
        for mid, (op, label) in pending.items():
            if op == "del":
                present.pop(label, None)
        d_keys = os.path.join(d.state, "keys")
        for f in os.listdir(d_keys):
            p = os.path.join(d_keys, f)
            if f.endswith(".key"):
                data = open(p, "rb").read()
                lb = f[:-4].encode()
                assert data[:9] == b"SIGILKEY\x02" and len(data) == 56 + len(lb) + 4 + 72, f"half-written {f}"
        # a deleted-in-flight key that survived on disk comes back: accept it
        # at the next list (above) only if its file is whole (checked here)
        relisted = set(f[:-4] for f in os.listdir(d_keys) if f.endswith(".key"))
        for label in list(present):
            assert label in relisted, (rnd_i, label, "acknowledged key missing on disk")
        for label in relisted - set(present):
            present[label] = None  # unknown public key: the next round fills it
        d.start()
        c = d.client()
        listed = {k["label"]: k["public_key"] for k in c.call("key.list")["keys"]}
        assert set(listed) == relisted, (set(listed) ^ relisted)
        for label in listed:
            if present.get(label) is not None:
                assert listed[label] == present[label]
            present[label] = listed[label]
        c.close()
        d.stop()


def test_enospc(tmp):
    state = os.path.join(tmp, "small")
    os.mkdir(state, 0o700)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", state],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"mount tmpfs (root needed): {r.stderr}"
    d = Daemon(tmp, state=state)
    try:
        d.start()
        c = d.client()
        keep = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(3)}
        # fill the file system
        fd = os.open(os.path.join(state, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        os.close(fd)
        msg = None
        for i in range(20):
            try:
                c.call("key.generate", {"type": "ed25519", "label": f"full{i}"})
            except RpcError as e:
                msg = e.message
                assert e.code == "internal"
                break
        assert msg and "No space left on device" in msg, msg
        for label, priv in keep.items():
            check_sign(c, label, priv)
        # a rekey on a full disk fails and changes nothing
        mk = open(os.path.join(state, "master.key"), "rb").read()
        msg = c.expect_error("internal", "rekey")
        assert "No space left on device" in msg, msg
        assert open(os.path.join(state, "master.key"), "rb").read() == mk
        for label, priv in keep.items():
            check_sign(c, label, priv)
        labels = {k["label"] for k in c.call("key.list")["keys"]}
        c.close()
        d.stop()
        os.unlink(os.path.join(state, "filler"))
        assert not [f for f in os.listdir(os.path.join(state, "keys")) if f.endswith(".tmp")]
        d.start()
        c = d.client()
        assert {k["label"] for k in c.call("key.list")["keys"]} == labels
        for label, priv in keep.items():
            check_sign(c, label, priv)
        c.close()
        d.stop()
    finally:
        if d.proc and d.proc.poll() is None:
            d.kill()
        subprocess.run(["umount", state])


PEER_SCRIPT = r"""
import msgpack, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(msgpack.packb([0, 1, "sign", [{"key": sys.argv[2], "message": b"m"}]], use_bin_type=True))
u = msgpack.Unpacker(raw=False)
while True:
    data = s.recv(65536)
    if not data:
        sys.exit("closed")
    u.feed(data)
    for obj in u:
        err = obj[2]
        print("ok" if err is None else err["code"] + ": " + err["message"])
        sys.exit(0)
"""


def peer_sign(d, label, uid=65534):
    """sign as another user (setpriv), the answer code or "ok"."""
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is required"
    r = subprocess.run([setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable or "/usr/bin/python3",
                        "-c", PEER_SCRIPT, d.sock, label], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_policy_rules(tmp):
    conf = os.path.join(tmp, "sigil.conf")
    with open(conf, "w") as f:
        f.write("socket_group = 65534\nallow_uids = 65534\n")
    os.chmod(tmp, 0o711)
    d = Daemon(tmp, args=["--config", conf]).start()
    c = d.client()
    now = int(time.time())

    def gen(label, policy, typ="ed25519"):
        return c.call("key.generate", {"type": typ, "label": label, "policy": policy})["key"]

    def denied(label, rule, method="sign"):
        params = {"key": label, "message": b"m"} if method == "sign" else {"key": label, "peer": bytes(range(1, 33))}
        msg = c.expect_error("denied", method, params)
        assert f"rule {rule}" in msg, msg

    def ok(label):
        c.call("sign", {"key": label, "message": b"m"})

    k = gen("nosign", {"ops": ["dh"]})
    assert k["policy"]["ops"] == ["dh"]
    denied("nosign", "ops")
    gen("xsign", {"ops": ["sign"]}, "x25519")
    denied("xsign", "ops", "dh")
    gen("expired", {"expires": now - 1})
    denied("expired", "expires")
    gen("fresh", {"expires": now + 3600})
    ok("fresh")
    gen("otheruid", {"uids": [4242]})
    denied("otheruid", "uids")
    gen("rootonly", {"uids": [0]})
    ok("rootonly")
    gen("othergid", {"gids": [4242]})
    denied("othergid", "gids")
    gen("rootgid", {"gids": [0]})
    ok("rootgid")
    gen("exe", {"exes": ["/nonexistent/bin/signer"]})
    denied("exe", "exes")
    gen("myexe", {"exes": [os.path.realpath(sys.executable)]})
    ok("myexe")
    gen("three", {"max_signs": 3})
    for _ in range(3):
        ok("three")
    denied("three", "max_signs")
    gen("rate", {"rate": 2})
    ok("rate")
    ok("rate")
    denied("rate", "rate")
    # another user (setpriv): allowed by uids, refused by a uid it lacks
    gen("nobody", {"uids": [65534]})
    denied("nobody", "uids")  # root is not in the list
    assert peer_sign(d, "nobody") == "ok"
    assert peer_sign(d, "rootonly").startswith("denied: key 'rootonly': rule uids"), peer_sign(d, "rootonly")
    gen("nobodygid", {"gids": [65534]})
    assert peer_sign(d, "nobodygid") == "ok"
    gen("nobodyexe", {"uids": [65534], "exes": ["/usr/bin/ssh"]})
    assert "rule exes" in peer_sign(d, "nobodyexe")
    # bad policies: a clear bad_request
    for bad in ({"ops": ["export"]}, {"ops": []}, {"uids": [-1]}, {"exes": ["relative"]}, {"rate": "x"}, []):
        msg = c.expect_error("bad_request", "key.generate", {"type": "ed25519", "label": "bad", "policy": bad})
        assert "policy" in msg, msg
    # the policy is stored (authenticated) and shown after a restart
    listed = {k["label"]: k for k in c.call("key.list")["keys"]}
    assert listed["three"]["policy"]["max_signs"] == 3
    assert listed["exe"]["policy"]["exes"] == ["/nonexistent/bin/signer"]
    assert c.call("key.public", {"label": "fresh"})["key"]["policy"]["expires"] == now + 3600
    c.close()
    d.restart()
    c = d.client()
    again = {k["label"]: k for k in c.call("key.list")["keys"]}
    assert again == listed
    denied("otheruid", "uids")
    denied("expired", "expires")
    c.close()
    d.stop()
    # a changed policy on disk: the file no longer opens
    p = os.path.join(d.state, "keys", "three.key")
    b = bytearray(open(p, "rb").read())
    lb = len(b"three")
    b[56 + lb + 10 + 7] ^= 0x01  # policy max_signs low byte: 3 -> 2
    open(p, "wb").write(b)
    d.start()
    c = d.client()
    assert "three" not in {k["label"] for k in c.call("key.list")["keys"]}
    assert "refusing keys/three.key: it does not open" in d.lastlog()
    c.close()
    d.stop()


def test_audit(tmp):
    audit = os.path.join(tmp, "audit.log")
    d = Daemon(tmp, args=["--audit-file", audit]).start()
    c = d.client()
    priv, seed = import_ed(c, "a")
    secret_msg = b"top secret message 0123456789"
    c.call("sign", {"key": "a", "message": secret_msg})
    c.call("key.generate", {"type": "ed25519", "label": "lim", "policy": {"max_signs": 1}})
    c.call("sign", {"key": "lim", "message": b"1"})
    c.expect_error("denied", "sign", {"key": "lim", "message": b"2"})
    c.expect_error("not_found", "sign", {"key": "nope", "message": b"3"})
    c.call("lock")
    c.expect_error("locked", "sign", {"key": "a", "message": b"4"})
    c.call("unlock")
    c.call("key.delete", {"label": "lim"})
    fp = c.call("key.public", {"label": "a"})["key"]["fingerprint"]
    c.close()
    d.stop()
    lines = open(audit).read().splitlines()
    exe = os.path.realpath(sys.executable)
    want = [("a", "import", "ok"), ("a", "sign", "ok"), ("lim", "generate", "ok"), ("lim", "sign", "ok"),
            ("lim", "sign", "denied"), ("nope", "sign", "not_found"), ("-", "lock", "ok"),
            ("a", "sign", "locked"), ("-", "unlock", "ok"), ("lim", "delete", "ok")]
    assert len(lines) == len(want), lines
    for line, (key, op, result) in zip(lines, want):
        f = dict(x.split("=", 1) for x in line.split(" ")[1:] if "=" in x)
        assert line.startswith("audit: time=") and f["uid"] == "0" and int(f["pid"]) == os.getpid(), line
        assert f["exe"] == exe and f["key"] == key and f["op"] == op and f["result"] == result, line
    assert f"fp={fp}" in lines[1]
    assert 'why="rule max_signs' in lines[4]
    text = open(audit, "rb").read() + open(d.logpath, "rb").read()
    for secret in (seed, seed.hex().encode(), secret_msg, secret_msg.hex().encode()):
        assert secret not in text
    # the journal (stderr) has the same lines
    log = d.logtext()
    for line in lines:
        assert line in log
    assert os.stat(audit).st_mode & 0o777 == 0o600


# ---- an independent XChaCha20-Poly1305 (HChaCha20 + pyca's ChaCha20Poly1305)

def _rotl(v, n):
    return ((v << n) & 0xffffffff) | (v >> (32 - n))


def hchacha20(key, nonce16):
    st = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]
    st += list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))

    def qr(a, b, c, d):
        st[a] = (st[a] + st[b]) & 0xffffffff; st[d] = _rotl(st[d] ^ st[a], 16)
        st[c] = (st[c] + st[d]) & 0xffffffff; st[b] = _rotl(st[b] ^ st[c], 12)
        st[a] = (st[a] + st[b]) & 0xffffffff; st[d] = _rotl(st[d] ^ st[a], 8)
        st[c] = (st[c] + st[d]) & 0xffffffff; st[b] = _rotl(st[b] ^ st[c], 7)
    for _ in range(10):
        qr(0, 4, 8, 12); qr(1, 5, 9, 13); qr(2, 6, 10, 14); qr(3, 7, 11, 15)
        qr(0, 5, 10, 15); qr(1, 6, 11, 12); qr(2, 7, 8, 13); qr(3, 4, 9, 14)
    return struct.pack("<8I", *(st[0:4] + st[12:16]))


def xchacha_open(key, nonce24, ct, ad):
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    sub = hchacha20(key, nonce24[:16])
    return ChaCha20Poly1305(sub).decrypt(b"\0" * 4 + nonce24[16:], ct, ad)


def xchacha_seal(key, nonce24, pt, ad):
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    sub = hchacha20(key, nonce24[:16])
    return nonce24 + ChaCha20Poly1305(sub).encrypt(b"\0" * 4 + nonce24[16:], pt, ad)


def open_keyfile(data, mk):
    """the seed of a format 2 key file, opened independently of sigild"""
    n = data[11]
    p = struct.unpack(">H", data[52:54])[0]
    owner = 4 if data[54] & 1 else 0  # header flag bit 0: the owner uid follows the policy
    hdr = 56 + n + p + owner
    assert len(data) == hdr + 72
    return xchacha_open(mk, data[hdr:hdr + 24], data[hdr + 24:], data[:hdr])


def test_format_opens_independently(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    priv, seed = import_ed(c, "k")
    c.call("key.generate", {"type": "ed25519", "label": "p", "policy": {"max_signs": 7, "uids": [0, 1]}})
    c.close()
    d.stop()
    mk = open(os.path.join(d.state, "master.key"), "rb").read()
    assert len(mk) == 32
    data = open(os.path.join(d.state, "keys", "k.key"), "rb").read()
    assert open_keyfile(data, mk) == seed
    data = open(os.path.join(d.state, "keys", "p.key"), "rb").read()
    assert len(open_keyfile(data, mk)) == 32
    bad = bytearray(data)
    bad[9] ^= 1  # the type, in the associated data
    try:
        open_keyfile(bytes(bad), mk)
    except Exception:
        pass
    else:
        raise AssertionError("a changed header opened")


def test_rekey(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    privs = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(5)}
    old_mk = open(os.path.join(d.state, "master.key"), "rb").read()
    assert c.call("rekey")["keys"] == 5
    new_mk = open(os.path.join(d.state, "master.key"), "rb").read()
    assert new_mk != old_mk
    for label, priv in privs.items():
        check_sign(c, label, priv)
        data = open(os.path.join(d.state, "keys", label + ".key"), "rb").read()
        assert open_keyfile(data, new_mk) == priv.private_bytes(RAW, RAWPRIV, NOENC)
    assert not os.path.exists(os.path.join(d.state, "rekey.pending"))
    c.call("lock")
    c.expect_error("locked", "rekey")
    c.call("unlock")
    c.close()
    d.restart()
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.close()
    d.stop()
    # a rekey interrupted after some files were re-sealed: rekey.pending
    # (N sealed under O) and a mix of files; the next start finishes it
    o = open(os.path.join(d.state, "master.key"), "rb").read()
    n = os.urandom(32)
    pending = xchacha_seal(o, os.urandom(24), n, b"SIGILREKEY1\0")
    fd = os.open(os.path.join(d.state, "rekey.pending"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, pending)
    os.close(fd)
    for i, label in enumerate(sorted(privs)):
        if i % 2:
            continue
        p = os.path.join(d.state, "keys", label + ".key")
        data = open(p, "rb").read()
        hdr = len(data) - 72
        seed = open_keyfile(data, o)
        open(p, "wb").write(data[:hdr] + xchacha_seal(n, os.urandom(24), seed, data[:hdr]))
    d.start()
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.close()
    assert "finished an interrupted rekey: 2 key files re-sealed" in d.lastlog(), d.lastlog()
    d.stop()
    assert open(os.path.join(d.state, "master.key"), "rb").read() == n
    assert not os.path.exists(os.path.join(d.state, "rekey.pending"))
    for label, priv in privs.items():
        data = open(os.path.join(d.state, "keys", label + ".key"), "rb").read()
        assert open_keyfile(data, n) == priv.private_bytes(RAW, RAWPRIV, NOENC)


def test_rekey_passphrase_and_kill9(tmp):
    d = Daemon(tmp, args=["--passphrase", *FAST_PW]).start()
    c = d.client()
    c.call("unlock", {"passphrase": "one"})
    privs = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(30)}
    c.expect_error("bad_request", "rekey")
    assert c.call("rekey", {"passphrase": "two"})["keys"] == 30
    for label, priv in list(privs.items())[:3]:
        check_sign(c, label, priv)
    c.close()
    d.restart()
    c = d.client()
    c.expect_error("denied", "unlock", {"passphrase": "one"})
    c.call("unlock", {"passphrase": "two"})
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.close()
    d.stop()
    # kill -9 at random moments of a rekey: after the restart, one of the
    # two passphrases opens every key
    rnd = random.Random(int.from_bytes(os.urandom(8), "little"))
    current = "two"
    mid = 0
    for i in range(10):
        d.start()
        c = d.client()
        c.call("unlock", {"passphrase": current})
        new = f"pw{i}"
        c.send("rekey", {"passphrase": new})
        time.sleep(rnd.uniform(0, 0.03))
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(20)
        c.close()
        mid += os.path.exists(os.path.join(d.state, "rekey.pending"))
        d.start()
        c = d.client()
        try:
            c.call("unlock", {"passphrase": new})
            current = new
        except RpcError as e:
            assert e.code == "denied", e
            c.call("unlock", {"passphrase": current})
        for label, priv in privs.items():
            check_sign(c, label, priv)
        c.close()
        d.stop()
    print(f"# rekey killed mid-way (rekey.pending left) in {mid} of 10 rounds", flush=True)


def new_key_file(tmp, name, hexform=False):
    p = os.path.join(tmp, name)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    k = os.urandom(32)
    os.write(fd, (k.hex() + "\n").encode() if hexform else k)
    os.close(fd)
    return p, k


def all_open_under(d, mk, privs):
    for label, priv in privs.items():
        data = open(os.path.join(d.state, "keys", label + ".key"), "rb").read()
        assert open_keyfile(data, mk) == priv.private_bytes(RAW, RAWPRIV, NOENC), label


def test_rekey_every_source(tmp):
    """rekey from a key file, a credential, a passphrase and a generated key
    to a new key file or a new passphrase; the old key after a completed
    rekey is refused at start with an error naming the new one"""
    a, ka = new_key_file(tmp, "a", hexform=True)
    b, kb = new_key_file(tmp, "b")
    d = Daemon(tmp, args=["--master-key-file", a]).start()
    c = d.client()
    privs = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(4)}
    # bad requests change nothing
    assert "--new-master-key-file" in c.expect_error("bad_request", "rekey")
    c.expect_error("bad_request", "rekey", {"master_key_file": "relative/path"})
    # a file sigild may not use: denied, one message whatever is wrong
    # (tests/fs/test_fs.py tests the kinds); sigild's log says which
    assert "new master key file" in c.expect_error("denied", "rekey", {"master_key_file": a})
    os.chmod(b, 0o644)
    c.expect_error("denied", "rekey", {"master_key_file": b})
    os.chmod(b, 0o600)
    c.expect_error("denied", "rekey", {"master_key_file": os.path.join(tmp, "missing")})
    assert "holds the current master key" in d.logtext() and "chmod 600" in d.logtext()
    c.expect_error("bad_request", "rekey", {"master_key_file": b, "passphrase": "x"})
    all_open_under(d, ka, privs)
    # key file a -> key file b
    assert c.call("rekey", {"master_key_file": b})["keys"] == 4
    all_open_under(d, kb, privs)
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.call("lock")  # unlock now reads b
    c.call("unlock")
    check_sign(c, "k0", privs["k0"])
    c.close()
    d.stop()
    assert "set master_key_file" in d.lastlog() or "point master_key_file" in d.lastlog(), d.lastlog()
    # the old key after the completed rekey: no start, an error naming b
    assert d.start(args=["--master-key-file", a], expect_exit=True) != 0
    log = d.lastlog()
    assert "is not the one the keys are sealed under" in log and b in log, log
    all_open_under(d, kb, privs)
    d.start(args=["--master-key-file", b])
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    # key file b -> a new passphrase
    assert c.call("rekey", {"passphrase": "pw one"})["keys"] == 4
    check_sign(c, "k1", privs["k1"])
    c.call("lock")
    c.expect_error("denied", "unlock")  # now the passphrase
    c.call("unlock", {"passphrase": "pw one"})
    c.close()
    d.stop()
    assert os.path.exists(os.path.join(d.state, "passphrase.params"))
    assert d.start(args=["--master-key-file", b], expect_exit=True) != 0
    assert "a new passphrase" in d.lastlog(), d.lastlog()
    d.start(args=FAST_PW)
    c = d.client()
    assert c.call("status")["locked"] is True
    c.expect_error("denied", "unlock", {"passphrase": "pw two"})
    c.call("unlock", {"passphrase": "pw one"})
    for label, priv in privs.items():
        check_sign(c, label, priv)
    # passphrase -> key file e
    e, ke = new_key_file(tmp, "e")
    assert c.call("rekey", {"master_key_file": e})["keys"] == 4
    c.close()
    d.stop()
    for f in ("passphrase.params", "passphrase.params.new", "master.key", "rekey.pending"):
        assert not os.path.exists(os.path.join(d.state, f)), f
    all_open_under(d, ke, privs)
    # no master key given: refused, and no master key is generated
    assert d.start(args=[], expect_exit=True) != 0
    assert e in d.lastlog() and not os.path.exists(os.path.join(d.state, "master.key")), d.lastlog()
    # a credential (the key in e) -> key file f; the old credential is refused
    cred = os.path.join(tmp, "creds")
    os.mkdir(cred, 0o700)
    shutil.copy(e, os.path.join(cred, "master-key"))
    env = clean_env(CREDENTIALS_DIRECTORY=cred)
    d.start(args=[], env=env)
    c = d.client()
    check_sign(c, "k2", privs["k2"])
    f, kf = new_key_file(tmp, "f", hexform=True)
    assert c.call("rekey", {"master_key_file": f})["keys"] == 4
    c.close()
    d.stop()
    all_open_under(d, kf, privs)
    assert d.start(args=[], env=env, expect_exit=True) != 0
    assert "systemd credential" in d.lastlog() and f in d.lastlog(), d.lastlog()
    shutil.copy(f, os.path.join(cred, "master-key"))  # LoadCredentialEncrypted= now gives f's key
    d.start(args=[], env=env)
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.close()
    d.stop()
    # after all these rekeys no state file holds a seed in plain form
    for path, data in all_state_bytes(d):
        for priv in privs.values():
            seed = priv.private_bytes(RAW, RAWPRIV, NOENC)
            assert seed not in data and seed.hex().encode() not in data, path
    # a generated master key -> key file g (master.key is removed)
    d2 = Daemon(os.path.join(tmp, "gen"))
    os.makedirs(d2.root, 0o700)
    d2.start()
    c = d2.client()
    p2 = {"g": import_ed(c, "g")[0]}
    g, kg = new_key_file(tmp, "g")
    assert c.call("rekey", {"master_key_file": g})["keys"] == 1
    c.close()
    d2.stop()
    assert not os.path.exists(os.path.join(d2.state, "master.key"))
    all_open_under(d2, kg, p2)
    assert d2.start(expect_exit=True) != 0
    assert not os.path.exists(os.path.join(d2.state, "master.key"))
    d2.start(args=["--master-key-file", g])
    c = d2.client()
    check_sign(c, "g", p2["g"])
    c.close()
    d2.stop()


def test_rekey_file_passphrase_kill9(tmp):
    """kill -9 at random moments of rekeys between key files and
    passphrases: after it, the old or the new master key opens every key"""
    first, _ = new_key_file(tmp, "first")
    d = Daemon(tmp)
    d.start()
    c = d.client()
    privs = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(30)}
    assert c.call("rekey", {"master_key_file": first})["keys"] == 30
    c.close()
    d.stop()
    rnd = random.Random(int.from_bytes(os.urandom(8), "little"))

    def start(src):
        """a start with src, ("file", path) or ("pw", passphrase): True if
        every key signs"""
        args = ["--master-key-file", src[1]] if src[0] == "file" else ["--passphrase", *FAST_PW]
        try:
            d.start(args=args)
        except RuntimeError:
            return False
        c = d.client()
        try:
            if src[0] == "pw":
                c.call("unlock", {"passphrase": src[1]})
            for label, priv in privs.items():
                check_sign(c, label, priv)
            return True
        except (RpcError, AssertionError):
            return False
        finally:
            c.close()

    cur = ("file", first)
    mid = 0
    for i in range(12):
        new = ("pw", f"pw{i}") if i % 2 == 0 else ("file", new_key_file(tmp, f"k{i}")[0])
        assert start(cur), d.lastlog()[-3000:]
        c = d.client()
        c.send("rekey", {"passphrase": new[1]} if new[0] == "pw" else {"master_key_file": new[1]})
        time.sleep(rnd.uniform(0, 0.03))
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(20)
        c.close()
        mid += os.path.exists(os.path.join(d.state, "rekey.pending"))
        if start(new):
            cur = new
        else:
            if d.proc.poll() is None:
                d.stop()
            assert start(cur), d.lastlog()[-3000:]
            if "finished an interrupted rekey" in d.lastlog():
                cur = new  # it was committed: rolled forward
        d.stop()
    log = d.logtext()
    print(f"# rekey killed mid-way (rekey.pending left) in {mid} of 12 rounds; rolled back "
          f"{log.count('rolled back an interrupted rekey')}, finished {log.count('finished an interrupted rekey')}, "
          f"committed record tidied {log.count('the rekey it records was committed')}", flush=True)


def test_rekey_commit_point_recovery(tmp):
    """a rekey a -> b killed after its commit point (master.check under b,
    rekey.pending left): the old key a finishes it (the seal takes b), the
    new key b tidies up, a third key is refused and touches nothing"""
    a, ka = new_key_file(tmp, "a")
    b, kb = new_key_file(tmp, "b")
    x, _ = new_key_file(tmp, "x")
    d = Daemon(tmp, args=["--master-key-file", a]).start()
    c = d.client()
    privs = {f"k{i}": import_ed(c, f"k{i}")[0] for i in range(3)}
    assert c.call("rekey", {"master_key_file": b})["keys"] == 3
    c.close()
    d.stop()
    pending_path = os.path.join(d.state, "rekey.pending")

    def leave_pending():
        hdr = b"SIGILRK2" + bytes([1]) + struct.pack(">H", len(b)) + b.encode()
        fd = os.open(pending_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, hdr + xchacha_seal(ka, os.urandom(24), kb, hdr))
        os.close(fd)

    leave_pending()
    assert d.start(args=["--master-key-file", x], expect_exit=True) != 0
    assert os.path.exists(pending_path)
    all_open_under(d, kb, privs)
    d.start(args=["--master-key-file", a])
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.call("lock")
    c.call("unlock")  # reads b now
    check_sign(c, "k0", privs["k0"])
    c.close()
    d.stop()
    assert "finished an interrupted rekey" in d.lastlog() and not os.path.exists(pending_path), d.lastlog()
    leave_pending()
    d.start(args=["--master-key-file", b])
    c = d.client()
    for label, priv in privs.items():
        check_sign(c, label, priv)
    c.close()
    d.stop()
    assert "the rekey it records was committed" in d.lastlog() and not os.path.exists(pending_path)


def test_max_signs_survives_restart(tmp):
    """a max_signs count survives a restart and a kill -9: never more than
    max_signs signatures in total; a missing count file counts as used up"""
    d = Daemon(tmp).start()
    c = d.client()
    pub = c.call("key.generate", {"type": "ed25519", "label": "lim", "policy": {"max_signs": 40}})["key"]["public_key"]
    c.call("key.generate", {"type": "ed25519", "label": "lost", "policy": {"max_signs": 3}})
    c.call("key.generate", {"type": "ed25519", "label": "free"})
    assert os.path.exists(os.path.join(d.state, "keys", "lim.uses"))
    assert not os.path.exists(os.path.join(d.state, "keys", "free.uses"))
    pk = Ed25519PublicKey.from_public_bytes(pub)
    good = set()

    def sign(c, i):
        msg = b"m%d" % i
        sig = c.call("sign", {"key": "lim", "message": msg})["signature"]
        pk.verify(sig, msg)
        good.add(msg)

    for i in range(5):
        sign(c, i)
    c.call("sign", {"key": "lost", "message": b"x"})
    c.close()
    d.restart()
    c = d.client()
    for i in range(5, 8):
        sign(c, i)
    # kill -9 while pipelined signs are in flight; count what came back
    rnd = random.Random(int.from_bytes(os.urandom(8), "little"))
    for rnd_i in range(3):
        c.close()
        c = d.client()
        for i in range(6):
            c.send("sign", {"key": "lim", "message": b"p%d-%d" % (rnd_i, i)})
        time.sleep(rnd.uniform(0, 0.01))
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(20)
        try:
            for i in range(6):
                _, _, err, res = c.recv()
                if err is None:
                    good.add(res["signature"])
        except (EOFError, OSError):
            pass
        c.close()
        d.start()
        c = d.client()
    i = 100
    while True:
        try:
            sign(c, i)
        except RpcError as e:
            assert e.code == "denied" and "rule max_signs" in e.message, e
            break
        i += 1
        assert len(good) <= 40, len(good)
    assert len(good) <= 40, len(good)
    print(f"# {len(good)} signatures released of a limit of 40 (3 kill -9 rounds)", flush=True)
    c.close()
    d.stop()
    os.unlink(os.path.join(d.state, "keys", "lost.uses"))
    d.start()
    c = d.client()
    msg = c.expect_error("denied", "sign", {"key": "lost", "message": b"x"})
    assert "rule max_signs" in msg, msg
    c.call("sign", {"key": "free", "message": b"x"})
    c.call("key.delete", {"label": "lim"})
    c.close()
    d.stop()
    assert "lost.uses is missing" in d.lastlog(), d.lastlog()
    assert not os.path.exists(os.path.join(d.state, "keys", "lim.uses"))
    # a large limit reserves uses in blocks (max_signs / 64) and
    # gives back the unused part at a clean stop; a kill -9 forfeits it
    uses = os.path.join(d.state, "keys", "big.uses")

    def on_disk():
        return struct.unpack(">Q", open(uses, "rb").read()[:8])[0]
    d.start()
    c = d.client()
    c.call("key.generate", {"type": "ed25519", "label": "big", "policy": {"max_signs": 100000}})
    for i in range(10):
        c.call("sign", {"key": "big", "message": b"x"})
    assert on_disk() == 1562, on_disk()
    c.close()
    d.stop()
    assert on_disk() == 10, on_disk()
    d.start()
    c = d.client()
    for i in range(70):
        c.call("sign", {"key": "big", "message": b"x"})
    c.close()
    assert on_disk() == 10 + 1562, on_disk()
    d.kill()
    d.start()
    d.stop()
    assert on_disk() == 1572, on_disk()


def test_sigil_command(tmp):
    """sigil keygen/import with a policy, list, audit, rekey, lock/unlock"""
    sigil = os.environ.get("SIGIL")
    assert sigil, "SIGIL (the sigil command) is not set"
    pwfile = os.path.join(tmp, "pw")
    with open(pwfile, "w") as f:
        f.write("first\n")
    d = Daemon(tmp, args=["--passphrase", *FAST_PW]).start()

    def run(*args, ok=True):
        r = subprocess.run([sigil, "-s", d.sock, *args], capture_output=True, text=True, timeout=60)
        if ok:
            assert r.returncode == 0, (args, r.returncode, r.stderr)
        return r
    run("unlock", "--passphrase-file", pwfile)
    run("keygen", "--allow-op", "sign", "--max-signs", "1", "--allow-uid", "0", "--expires", "+3600", "--rate", "60",
        "--allow-exe", os.path.realpath(sigil), "pol")
    c = d.client()
    pol = c.call("key.public", {"label": "pol"})["key"]["policy"]
    assert pol["ops"] == ["sign"] and pol["max_signs"] == 1 and pol["uids"] == [0] and pol["rate"] == 60
    assert pol["exes"] == [os.path.realpath(sigil)] and abs(pol["expires"] - time.time() - 3600) < 60
    c.close()
    data = os.path.join(tmp, "data")
    with open(data, "wb") as f:
        f.write(b"data")
    run("sign", "--key", "pol", "--format", "hex", "-o", "-", data)
    r = run("sign", "--key", "pol", "--format", "hex", "-o", "-", data, ok=False)
    assert r.returncode == 4 and "rule max_signs" in r.stderr, (r.returncode, r.stderr)
    r = run("keygen", "--allow-op", "export", "bad", ok=False)
    assert r.returncode == 2 and "--allow-op" in r.stderr
    seedfile = os.path.join(tmp, "seed")
    with open(seedfile, "w") as f:
        f.write(os.urandom(32).hex())
    run("import", "--allow-uid", "4242", "imp", seedfile)
    r = run("sign", "--key", "imp", "--format", "hex", "-o", "-", data, ok=False)
    assert r.returncode == 4 and "rule uids" in r.stderr, r.stderr
    import json
    doc = json.loads(run("--json", "audit", "-n", "2").stdout)
    assert len(doc["lines"]) == 2 and doc["lines"][-1].startswith("audit: "), doc
    lines = run("audit", "-n", "3").stdout.splitlines()
    assert len(lines) == 3 and all(l.startswith("audit: ") for l in lines), lines
    assert "key=imp" in lines[-1] and "result=denied" in lines[-1]
    # rekey to a new passphrase, read from stdin
    r = subprocess.run([sigil, "-s", d.sock, "rekey", "--passphrase-file", "-"], input="second\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "2 keys re-sealed" in r.stdout, (r.stdout, r.stderr)
    run("lock")
    r = run("unlock", "--passphrase-file", pwfile, ok=False)
    assert r.returncode == 4 and "wrong passphrase" in r.stderr, r.stderr
    r = subprocess.run([sigil, "-s", d.sock, "unlock", "--passphrase-file", "-"], input="second\n",
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d.stop()


def test_sigil_list_policy_and_rekey_file(tmp):
    """sigil list shows each key's policy (text and --json); sigil rekey
    --new-master-key-file"""
    import json
    sigil = os.environ.get("SIGIL")
    assert sigil, "SIGIL (the sigil command) is not set"
    d = Daemon(tmp).start()

    def run(*args, ok=True):
        r = subprocess.run([sigil, "-s", d.sock, *args], capture_output=True, text=True, timeout=60)
        if ok:
            assert r.returncode == 0, (args, r.returncode, r.stderr)
        return r
    run("keygen", "--allow-op", "sign", "--max-signs", "7", "--allow-uid", "0", "--allow-uid", "5",
        "--allow-gid", "6", "--expires", "+3600", "--rate", "60", "--allow-exe", "/usr/bin/true", "pol")
    run("keygen", "plain")
    out = run("list").stdout.splitlines()
    i = [n for n, l in enumerate(out) if l.startswith("pol ")][0]
    line = out[i + 1]
    assert line.startswith("  policy: ops=sign expires=") and line.endswith(
        " uids=0,5 gids=6 exes=/usr/bin/true max_signs=7 rate=60/min"), line
    j = [n for n, l in enumerate(out) if l.startswith("plain ")][0]
    assert j + 1 == len(out) or not out[j + 1].startswith("  policy:"), out
    keys = {k["label"]: k for k in json.loads(run("--json", "list").stdout)["keys"]}
    p = keys["pol"]["policy"]
    assert p["ops"] == ["sign"] and p["uids"] == [0, 5] and p["gids"] == [6] and p["exes"] == ["/usr/bin/true"]
    assert p["max_signs"] == 7 and p["rate"] == 60 and abs(p["expires"] - time.time() - 3600) < 60, p
    assert "policy" not in keys["plain"], keys["plain"]
    # rekey to a key file given by a relative path (sigil makes it absolute)
    nk, knew = new_key_file(tmp, "new.key")
    r = subprocess.run([sigil, "-s", d.sock, "rekey", "--new-master-key-file", "new.key"], cwd=tmp,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "2 keys re-sealed" in r.stdout and nk in r.stdout, (r.stdout, r.stderr)
    r = run("rekey", "--new-master-key-file", nk, "--passphrase-file", nk, ok=False)
    assert r.returncode == 2, (r.returncode, r.stderr)
    d.stop()
    data = open(os.path.join(d.state, "keys", "plain.key"), "rb").read()
    assert len(open_keyfile(data, knew)) == 32


def test_config_file_at_rest(tmp):
    """master_key_file, audit_file, auto_lock, passphrase and pwhash_* in
    the configuration file; the command line wins; bad values are errors"""
    mk, kmk = new_key_file(tmp, "mk")
    audit = os.path.join(tmp, "audit.log")
    conf = os.path.join(tmp, "sigil.conf")
    with open(conf, "w") as f:
        f.write(f"master_key_file = {mk}\naudit_file = {audit}\nauto_lock = 2s\n")
    d = Daemon(tmp, args=["--config", conf]).start()
    c = d.client()
    priv, _ = import_ed(c, "k")
    check_sign(c, "k", priv)
    assert "master key: master key file" in d.lastlog()
    deadline = time.time() + 20
    while c.call("status")["locked"] is False:
        assert time.time() < deadline, "auto_lock = 2s did not lock"
        time.sleep(0.2)
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    c.call("unlock")
    check_sign(c, "k", priv)
    c.close()
    d.stop()
    data = open(os.path.join(d.state, "keys", "k.key"), "rb").read()
    assert open_keyfile(data, kmk) == priv.private_bytes(RAW, RAWPRIV, NOENC)
    assert not os.path.exists(os.path.join(d.state, "master.key"))
    assert "key=k" in open(audit).read()
    # the command line wins over the file
    other, _ = new_key_file(tmp, "other")
    d.start(args=["--config", conf, "--master-key-file", other, "--auto-lock", "1000m"])
    c = d.client()
    assert c.call("key.list")["keys"] == []
    c.close()
    d.stop()
    # passphrase = yes and fast Argon2id limits from the file
    d2 = Daemon(os.path.join(tmp, "pw"))
    os.makedirs(d2.root, 0o700)
    conf2 = os.path.join(tmp, "pw.conf")
    with open(conf2, "w") as f:
        f.write("passphrase = yes\npwhash_ops = 1\npwhash_mem_kib = 8\nephemeral = no\n")
    d2.start(args=["--config", conf2])
    c = d2.client()
    assert c.call("status")["locked"] is True
    c.call("unlock", {"passphrase": "p"})
    c.close()
    d2.stop()
    params = open(os.path.join(d2.state, "passphrase.params"), "rb").read()
    assert struct.unpack(">QQ", params[10:26]) == (1, 8192), params[10:26]
    # ephemeral = yes: nothing on disk
    conf3 = os.path.join(tmp, "eph.conf")
    with open(conf3, "w") as f:
        f.write("ephemeral = yes\n")
    d3 = Daemon(os.path.join(tmp, "eph"))
    os.makedirs(d3.root, 0o700)
    d3.start(args=["--config", conf3])
    c = d3.client()
    import_ed(c, "e")
    c.close()
    d3.stop()
    assert "--ephemeral" in d3.lastlog() and not os.path.exists(os.path.join(d3.state, "keys", "e.key"))
    for bad, what in (("master_key_file = relative\n", "master_key_file"), ("passphrase = maybe\n", "passphrase"),
                      ("auto_lock = 5h\n", "auto_lock"), ("pwhash_ops = 0\n", "pwhash_ops"),
                      ("audit_file = x\n", "audit_file"), ("pwhash_mem_kib = 1\n", "pwhash_mem_kib")):
        with open(conf, "w") as f:
            f.write(bad)
        assert d.start(args=["--config", conf], expect_exit=True) != 0
        assert what in d.lastlog(), (bad, d.lastlog())


def test_auto_lock(tmp):
    d = Daemon(tmp, args=["--auto-lock", "2s"]).start()
    c = d.client()
    priv, seed = import_ed(c, "k")
    for _ in range(3):  # use keeps it unlocked
        time.sleep(0.8)
        check_sign(c, "k", priv)
    assert c.call("status")["locked"] is False
    time.sleep(3.5)
    assert c.call("status")["locked"] is True
    c.expect_error("locked", "sign", {"key": "k", "message": b"m"})
    assert not proc_memory_has(d.proc.pid, seed)
    assert "auto-lock: no key used for 2 s" in d.lastlog()
    c.call("unlock")
    check_sign(c, "k", priv)
    c.close()
    d.stop()
    assert d.start(args=["--auto-lock", "0"], expect_exit=True) == 2


def test_export(tmp):
    d = Daemon(tmp).start()
    c = d.client()
    priv = Ed25519PrivateKey.generate()
    seed = priv.private_bytes(RAW, RAWPRIV, NOENC)
    c.call("key.import", {"type": "ed25519", "label": "ex", "seed": seed, "exportable": True})
    assert c.call("key.export", {"label": "ex"})["seed"] == seed
    import_ed(c, "noex")
    msg = c.expect_error("denied", "key.export", {"label": "noex"})
    assert "rule exportable" in msg, msg
    c.call("key.generate", {"type": "x25519", "label": "exuid", "exportable": True, "policy": {"uids": [4242]}})
    msg = c.expect_error("denied", "key.export", {"label": "exuid"})
    assert "rule uids" in msg, msg
    c.expect_error("not_found", "key.export", {"label": "nope"})
    c.call("lock")
    c.expect_error("locked", "key.export", {"label": "ex"})
    c.call("unlock")
    c.close()
    sigil = os.environ["SIGIL"]
    r = subprocess.run([sigil, "-s", d.sock, "export", "ex"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == seed.hex(), (r.returncode, r.stderr)
    r = subprocess.run([sigil, "-s", d.sock, "export", "noex"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 4 and "rule exportable" in r.stderr, r.stderr
    d.stop()
    log = d.logtext()
    assert "key=ex " in log and "op=export result=ok" in log and "op=export result=denied" in log
    assert seed.hex() not in log


TESTS = [
    test_restart_keeps_keys_and_no_plain_seed,
    test_tampered_files_refused,
    test_format1_migrated,
    test_lock_wipes_and_unlock_reopens,
    test_lock_leaves_no_seed_in_memory,
    test_master_key_file,
    test_systemd_credential,
    test_passphrase,
    test_ephemeral,
    test_kill9_storm,
    test_enospc,
    test_policy_rules,
    test_audit,
    test_format_opens_independently,
    test_rekey,
    test_rekey_passphrase_and_kill9,
    test_rekey_every_source,
    test_rekey_file_passphrase_kill9,
    test_rekey_commit_point_recovery,
    test_max_signs_survives_restart,
    test_sigil_command,
    test_sigil_list_policy_and_rekey_file,
    test_config_file_at_rest,
    test_auto_lock,
    test_export,
]


def main():
    assert "SIGILD" in os.environ, "SIGILD is not set"
    only = sys.argv[1:]
    tests = [t for t in TESTS if not only or t.__name__ in only]
    return sigiltest.tap_in_tmp(tests, "sigil-atrest-", mode=0o700)


if __name__ == "__main__":
    sys.exit(main())
