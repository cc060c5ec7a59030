#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_python_client.py - an independent sigild client on Python's msgpack.

Starts the real sigild (path in $SIGILD) on a temporary socket and state
directory, talks msgpack-rpc to it with the msgpack package (not sigil's
proto/ code), and checks its signatures and shared secrets with
pyca/cryptography. Output is TAP. Run with /usr/bin/python3 (Debian's
python3-msgpack and python3-cryptography).
"""
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
import traceback

import msgpack
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey, Ed25519PublicKey)
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey, X25519PublicKey)

RAW = serialization.Encoding.Raw
RAWPUB = serialization.PublicFormat.Raw
RAWPRIV = serialization.PrivateFormat.Raw
NOENC = serialization.NoEncryption()


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.msgid = 0

    def close(self):
        self.sock.close()

    def send(self, method, params=None, msgid=None):
        if msgid is None:
            self.msgid += 1
            msgid = self.msgid
        self.sock.sendall(msgpack.packb([0, msgid, method, [params or {}]], use_bin_type=True))
        return msgid

    def recv(self):
        while True:
            for obj in self.unpacker:
                assert isinstance(obj, list) and len(obj) == 4 and obj[0] == 1, obj
                return obj
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("sigild closed the connection")
            self.unpacker.feed(data)

    def call(self, method, params=None):
        msgid = self.send(method, params)
        _, rid, err, result = self.recv()
        assert rid == msgid, (rid, msgid)
        if err is not None:
            assert set(err) >= {"code", "message"}, err
            raise RpcError(err["code"], err["message"])
        return result


class Daemon:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sigil-pytest-")
        self.sock = os.path.join(self.dir, "run", "sigild.sock")
        self.state = os.path.join(self.dir, "state")
        self.log = open(os.path.join(self.dir, "sigild.log"), "wb")
        self.proc = subprocess.Popen(
            [os.environ["SIGILD"], "--socket", self.sock, "--state-dir", self.state,
             "--workers", "2", "--foreground"],
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sigild exited with {self.proc.returncode}")
            try:
                Client(self.sock).close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("sigild did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(20)
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


TESTS = [test_hello, test_sign_generated, test_sign_imported, test_fingerprint, test_verify,
         test_dh, test_errors, test_pipelined, test_list_delete]


def main():
    print(f"1..{len(TESTS) + 1}", flush=True)
    failed = 0
    d = Daemon()
    c = Client(d.sock)
    for n, t in enumerate(TESTS, 1):
        try:
            t(c)
            print(f"ok {n} - {t.__name__}", flush=True)
        except Exception:
            failed += 1
            print(f"not ok {n} - {t.__name__}", flush=True)
            for line in traceback.format_exc().splitlines():
                print("# " + line, flush=True)
    c.close()
    rc = d.stop()
    if rc == 0:
        print(f"ok {len(TESTS) + 1} - sigild exits 0 on SIGTERM", flush=True)
    else:
        failed += 1
        print(f"not ok {len(TESTS) + 1} - sigild exited with {rc} on SIGTERM", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
