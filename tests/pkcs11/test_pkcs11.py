#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_pkcs11.py - sigil-pkcs11.so with the real consumers (issue 20, docs/pkcs11.md).

Starts the real sigild ($SIGILD) on a temporary socket, points the module
($SIGIL_PKCS11) at it with SIGIL_SOCK, and drives it with OpenSC's
pkcs11-tool (-L, -M, -O, --sign -m EDDSA, --keypairgen), GnuTLS's p11tool
(--list-all) and certtool (--generate-self-signed, checked by openssl),
p11-kit (the module file) and python3-pykcs11 (attributes, every sign mode,
verify, X25519 derive against pyca's exchange, key pairs, login, and the
error paths). Signatures are checked with pyca/cryptography, keys against
an independent msgpack client (tests/pylib/sigiltest.py). Output is TAP.
A missing tool fails the test.
"""
import base64
import ctypes
import gc
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives import hashes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import sigiltest  # noqa: E402
from sigiltest import NOENC, RAW, RAWPRIV, RAWPUB  # noqa: E402

import PyKCS11  # noqa: E402
from PyKCS11 import (CKA_CLASS, CKA_DERIVE, CKA_EC_PARAMS, CKA_EC_POINT, CKA_EXTRACTABLE,  # noqa: E402
                     CKA_ID, CKA_KEY_TYPE, CKA_LABEL, CKA_NEVER_EXTRACTABLE, CKA_SENSITIVE,
                     CKA_SIGN, CKA_TOKEN, CKA_VALUE, CKA_VALUE_LEN, CKA_VERIFY, CKD_NULL,
                     CKK_EC_EDWARDS, CKK_EC_MONTGOMERY, CKK_GENERIC_SECRET, CKM_ECDH1_DERIVE,
                     CKM_EDDSA, CKM_EC_EDWARDS_KEY_PAIR_GEN, CKM_EC_MONTGOMERY_KEY_PAIR_GEN,
                     CKO_PRIVATE_KEY, CKO_PUBLIC_KEY, CKO_SECRET_KEY, CKF_RW_SESSION,
                     CKF_SERIAL_SESSION, PyKCS11Error)

FAST_PW = ["--pwhash-ops", "1", "--pwhash-mem", "8"]
OID_ED = bytes.fromhex("06032b6570")
OID_X = bytes.fromhex("06032b656e")
MODULE = os.environ.get("SIGIL_PKCS11", "")


def need(tool):
    path = shutil.which(tool)
    assert path, f"{tool} is required (scripts/deps.sh installs it)"
    return path


class Daemon:
    """sigild on <root>/run/sigild.sock and <root>/state."""

    def __init__(self, root, args=(), prefix=()):
        self.root = root
        self.prefix = list(prefix)
        self.sock = os.path.join(root, "run", "sigild.sock")
        self.state = os.path.join(root, "state")
        self.logpath = os.path.join(root, "sigild.log")
        self.args = list(args)
        self.proc = None

    def start(self):
        log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(
            self.prefix + [os.environ["SIGILD"], "--foreground", "--socket", self.sock, "--state-dir", self.state,
             "--allow-unlocked-memory", "--workers", "2", *self.args],
            stdout=log, stderr=log, env=sigiltest.clean_env())
        log.close()
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sigild exited with {self.proc.returncode}")
            try:
                sigiltest.Client(self.sock).close()
                return self
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("sigild did not start")

    def client(self):
        return sigiltest.Client(self.sock)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(20)

    def env(self, **extra):
        return sigiltest.clean_env(SIGIL_SOCK=self.sock, **extra)


def run(cmd, d, check=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, env=d.env(), timeout=120, **kw)
    if check:
        assert r.returncode == 0, f"{cmd} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r


def ckid(key):
    """CKA_ID: the first 16 bytes of the SHA-256 in the fingerprint."""
    b64 = key["fingerprint"].split(":", 1)[1]
    return base64.b64decode(b64 + "=" * (-len(b64) % 4))[:16]


def import_ed(c, label):
    priv = Ed25519PrivateKey.generate()
    c.call("key.import", {"type": "ed25519", "label": label, "seed": priv.private_bytes(RAW, RAWPRIV, NOENC)})
    return priv


def import_x(c, label):
    priv = X25519PrivateKey.generate()
    c.call("key.import", {"type": "x25519", "label": label, "seed": priv.private_bytes(RAW, RAWPRIV, NOENC)})
    return priv


def pub_of(priv):
    return priv.public_key().public_bytes(RAW, RAWPUB)


class P11:
    """The module loaded through python3-pykcs11, with SIGIL_SOCK set for it.
    A new one finalizes the previous one (C_Finalize, dlclose)."""

    current = None

    def __init__(self, d):
        if P11.current is not None:
            P11.current.lib = None
            gc.collect()
        P11.current = self
        os.environ["SIGIL_SOCK"] = d.sock
        self.lib = PyKCS11.PyKCS11Lib()
        self.lib.load(MODULE)
        slots = self.lib.getSlotList(tokenPresent=True)
        assert slots == [0], slots
        self.slot = slots[0]

    def session(self, rw=True):
        return self.lib.openSession(self.slot, CKF_SERIAL_SESSION | (CKF_RW_SESSION if rw else 0))

    def find(self, s, label, klass):
        objs = s.findObjects([(CKA_LABEL, label), (CKA_CLASS, klass)])
        assert len(objs) == 1, (label, klass, objs)
        return objs[0]


def expect_ckr(name, f, *args):
    want = getattr(PyKCS11, name)
    try:
        f(*args)
    except PyKCS11Error as e:
        assert e.value == want, f"{f.__name__}: got {PyKCS11.CKR[e.value]}, want {name}"
        return
    raise AssertionError(f"{f.__name__} succeeded; expected {name}")


def eddsa(ph=False, ctx=b""):
    """CKM_EDDSA with CK_EDDSA_PARAMS (x86-64 layout: CK_BBOOL, pad, CK_ULONG, pointer)."""
    buf = ctypes.create_string_buffer(ctx, len(ctx)) if ctx else None
    addr = ctypes.addressof(buf) if buf is not None else 0
    m = PyKCS11.Mechanism(CKM_EDDSA, struct.pack("=B7xQQ", 1 if ph else 0, len(ctx), addr))
    m.keep = buf  # the context lives as long as the mechanism
    return m


# ---- the consumers ----

def test_pkcs11_tool_list(d):
    tool = need("pkcs11-tool")
    c = d.client()
    import_ed(c, "ed-list")
    import_x(c, "x-list")
    keys = {k["label"]: k for k in c.call("key.list")["keys"]}
    c.close()
    r = run([tool, "--module", MODULE, "-L"], d)
    assert "token label        : sigil" in r.stdout, r.stdout
    assert "Slot 0 (0x0): " + d.sock in r.stdout, r.stdout
    r = run([tool, "--module", MODULE, "-M"], d)
    for m in ("EDDSA", "EC-EDWARDS-KEY-PAIR-GEN", "EC-MONTGOMERY-KEY-PAIR-GEN", "ECDH1-DERIVE"):
        assert m in r.stdout, r.stdout
    r = run([tool, "--module", MODULE, "-O"], d)
    for label, k in keys.items():
        assert f"label:      {label}" in r.stdout, r.stdout
        assert ckid(k).hex() in r.stdout, (k, r.stdout)
        assert "0420" + k["public_key"].hex() in r.stdout, r.stdout
    assert "EC_PARAMS:  06032b6570" in r.stdout and "EC_PARAMS:  06032b656e" in r.stdout, r.stdout
    assert r.stdout.count("Private Key Object; EC_EDWARDS") == 1
    assert r.stdout.count("Private Key Object; EC_MONTGOMERY") == 1


def test_pkcs11_tool_sign(d, tmp):
    tool = need("pkcs11-tool")
    c = d.client()
    priv = import_ed(c, "ed-sign")
    c.close()
    for n in (0, 64, 5000):  # pkcs11-tool uses C_SignUpdate above 1024 bytes
        msg = os.urandom(n)
        mpath, spath = os.path.join(tmp, "msg"), os.path.join(tmp, "sig")
        open(mpath, "wb").write(msg)
        run([tool, "--module", MODULE, "--sign", "-m", "EDDSA", "--label", "ed-sign", "-i", mpath, "-o", spath], d)
        sig = open(spath, "rb").read()
        assert len(sig) == 64
        priv.public_key().verify(sig, msg)  # raises if invalid
        assert sig == priv.sign(msg)
    # and OpenSSL, with the public key as pkcs11-tool exports it (PEM SPKI)
    openssl = need("openssl")
    pem = os.path.join(tmp, "pub.pem")
    run([tool, "--module", MODULE, "--read-object", "--type", "pubkey", "--label", "ed-sign", "-o", pem], d)
    r = run([openssl, "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin", "-in", mpath, "-sigfile", spath], d)
    assert "Signature Verified Successfully" in r.stdout, r.stdout
    open(mpath, "ab").write(b"x")
    r = run([openssl, "pkeyutl", "-verify", "-pubin", "-inkey", pem, "-rawin", "-in", mpath, "-sigfile", spath], d,
            check=False)
    assert r.returncode != 0, r.stdout
    # pkcs11-tool's own verify (C_Verify through sigild)
    open(mpath, "wb").write(msg)
    r = run([tool, "--module", MODULE, "--verify", "-m", "EDDSA", "--label", "ed-sign", "-i", mpath,
             "--signature-file", spath], d)
    assert "Signature is valid" in r.stdout, r.stdout


def test_pkcs11_tool_keypairgen(d, tmp):
    tool = need("pkcs11-tool")
    r = run([tool, "--module", MODULE, "--keypairgen", "--key-type", "EC:edwards25519", "--label", "p11gen"], d)
    assert "Private Key Object; EC_EDWARDS" in r.stdout, r.stdout
    c = d.client()
    k = c.call("key.public", {"label": "p11gen"})["key"]
    assert k["type"] == "ed25519"
    msg = os.urandom(100)
    mpath, spath = os.path.join(tmp, "msg"), os.path.join(tmp, "sig")
    open(mpath, "wb").write(msg)
    run([tool, "--module", MODULE, "--sign", "-m", "EDDSA", "--label", "p11gen", "-i", mpath, "-o", spath], d)
    Ed25519PublicKey.from_public_bytes(k["public_key"]).verify(open(spath, "rb").read(), msg)
    # OpenSC 0.23 writes curve25519 as a PrintableString with a wrong length
    r = run([tool, "--module", MODULE, "--keypairgen", "--key-type", "EC:curve25519", "--label", "p11genx"], d)
    assert c.call("key.public", {"label": "p11genx"})["key"]["type"] == "x25519"
    # and deletes it again
    run([tool, "--module", MODULE, "--delete-object", "--type", "privkey", "--label", "p11genx"], d)
    c.expect_error("not_found", "key.public", {"label": "p11genx"})
    c.close()


def test_p11tool_list_all(d):
    tool = need("p11tool")
    c = d.client()
    import_ed(c, "ed-gnutls")
    k = c.call("key.public", {"label": "ed-gnutls"})["key"]
    c.close()
    r = run([tool, "--provider", MODULE, "--list-all"], d)
    idurl = "".join("%%%02X" % b for b in ckid(k))
    assert f"token=sigil;id={idurl};object=ed-gnutls;type=private" in r.stdout, r.stdout
    assert f"token=sigil;id={idurl};object=ed-gnutls;type=public" in r.stdout, r.stdout
    assert "Private key (EdDSA (Ed25519))" in r.stdout, r.stdout
    r = run([tool, "--provider", MODULE, "--list-tokens"], d)
    assert "Label: sigil" in r.stdout and "Model: sigild" in r.stdout, r.stdout


def test_certtool_self_signed(d, tmp):
    tool, openssl = need("certtool"), need("openssl")
    c = d.client()
    priv = import_ed(c, "ed-cert")
    c.close()
    tmpl = os.path.join(tmp, "cert.cfg")
    open(tmpl, "w").write("cn = sigil pkcs11 test\nexpiration_days = 30\nca\ncert_signing_key\n")
    cert = os.path.join(tmp, "cert.pem")
    url = "pkcs11:token=sigil;object=ed-cert;type=private"
    run([tool, "--provider", MODULE, "--generate-self-signed", "--load-privkey", url,
         "--template", tmpl, "--outfile", cert], d)
    r = run([openssl, "verify", "-CAfile", cert, cert], d)
    assert r.stdout.strip() == f"{cert}: OK", r.stdout
    r = run([openssl, "x509", "-in", cert, "-noout", "-text"], d)
    assert "Signature Algorithm: ED25519" in r.stdout, r.stdout
    r = subprocess.run([openssl, "x509", "-in", cert, "-noout", "-pubkey"], capture_output=True, check=True)
    r = subprocess.run([openssl, "pkey", "-pubin", "-outform", "DER"], input=r.stdout, capture_output=True,
                       check=True)
    assert r.stdout[-32:] == pub_of(priv), "the certificate holds another key"


NOBODY = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


def test_p11kit_module_file(d, tmp):
    """The module file (a relative name, as installed) found by p11-kit in a
    user configuration that points at the built module. p11-kit reads no
    user configuration as root: the user, and a sigild of its own, run as
    uid 65534."""
    p11kit, p11tool = need("p11-kit"), need("p11tool")
    need("setpriv")
    src = os.path.join(os.environ["SIGIL_SOURCE_ROOT"], "packaging", "p11-kit", "sigil.module")
    text = open(src).read()
    assert "module: sigil-pkcs11.so" in text, text
    top = tempfile.mkdtemp(prefix="sigil-pkcs11-nobody-")
    try:
        os.chown(top, 65534, 65534)
        user = Daemon(top, prefix=NOBODY).start()
        c = user.client()
        import_ed(c, "ed-p11kit")
        c.close()
        home = os.path.join(top, "home")
        mods = os.path.join(home, ".config", "pkcs11", "modules")
        os.makedirs(mods)
        open(os.path.join(mods, "sigil.module"), "w").write(
            text.replace("module: sigil-pkcs11.so", "module: " + MODULE))
        for dirpath, _, files in os.walk(home):
            os.chown(dirpath, 65534, 65534)
            for f in files:
                os.chown(os.path.join(dirpath, f), 65534, 65534)
        env = user.env(HOME=home)
        r = subprocess.run(NOBODY + [p11kit, "list-modules"], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        block = r.stdout[r.stdout.index("sigil: " + MODULE):] if "sigil: " + MODULE in r.stdout else ""
        assert "library-description: sigil PKCS#11 module" in block, r.stdout
        assert "token: sigil" in block and "model: sigild" in block, r.stdout
        # GnuTLS through p11-kit, without --provider
        r = subprocess.run(NOBODY + [p11tool, "--list-all", "pkcs11:token=sigil"], capture_output=True,
                           text=True, env=env, timeout=60)
        assert "object=ed-p11kit;type=private" in r.stdout, r.stdout + r.stderr
        user.stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---- python3-pykcs11 ----

def test_attributes(d):
    c = d.client()
    import_ed(c, "ed-attr")
    import_x(c, "x-attr")
    keys = {k["label"]: k for k in c.call("key.list")["keys"]}
    c.close()
    p = P11(d)
    ti = p.lib.getTokenInfo(p.slot)
    assert ti.label.strip() == "sigil" and ti.model.strip() == "sigild", ti
    s = p.session()
    for label, ktype, oid in (("ed-attr", CKK_EC_EDWARDS, OID_ED), ("x-attr", CKK_EC_MONTGOMERY, OID_X)):
        k = keys[label]
        for klass in (CKO_PRIVATE_KEY, CKO_PUBLIC_KEY):
            o = p.find(s, label, klass)
            v = s.getAttributeValue(o, [CKA_CLASS, CKA_KEY_TYPE, CKA_LABEL, CKA_ID, CKA_EC_PARAMS,
                                        CKA_EC_POINT, CKA_TOKEN], allAsBinary=True)
            assert struct.unpack("=Q", bytes(v[0]))[0] == klass
            assert struct.unpack("=Q", bytes(v[1]))[0] == ktype
            assert bytes(v[2]) == label.encode()
            assert bytes(v[3]) == ckid(k), (bytes(v[3]).hex(), k)
            assert bytes(v[4]) == oid
            assert bytes(v[5]) == b"\x04\x20" + k["public_key"]
            assert bytes(v[6]) == b"\x01"
            if klass == CKO_PRIVATE_KEY:
                sens, ext, never, sign, derive = s.getAttributeValue(
                    o, [CKA_SENSITIVE, CKA_EXTRACTABLE, CKA_NEVER_EXTRACTABLE, CKA_SIGN, CKA_DERIVE])
                assert (sens, ext, never) == (True, False, True)
                assert (sign, derive) == ((True, False) if ktype == CKK_EC_EDWARDS else (False, True))
                # CKA_VALUE of a private key is never readable
                tmpl = PyKCS11.LowLevel.ckattrlist(1)
                tmpl[0].SetType(CKA_VALUE)
                assert p.lib.lib.C_GetAttributeValue(s.session, o, tmpl) == PyKCS11.CKR_ATTRIBUTE_SENSITIVE
            else:
                assert s.getAttributeValue(o, [CKA_VERIFY])[0] == (ktype == CKK_EC_EDWARDS)
                tmpl = PyKCS11.LowLevel.ckattrlist(1)
                tmpl[0].SetType(CKA_VALUE)
                assert p.lib.lib.C_GetAttributeValue(s.session, o, tmpl) == PyKCS11.CKR_ATTRIBUTE_TYPE_INVALID
    # search by CKA_ID and by the PrintableString form of the curve
    objs = s.findObjects([(CKA_ID, ckid(keys["ed-attr"]))])
    assert len(objs) == 2
    objs = s.findObjects([(CKA_EC_PARAMS, b"\x13\x0ccurve25519")])
    assert len(objs) == 0  # a wrong length byte is not the curve
    objs = s.findObjects([(CKA_EC_PARAMS, b"\x13\x0acurve25519"), (CKA_CLASS, CKO_PUBLIC_KEY)])
    assert len(objs) == 1
    s.closeSession()


def test_sign_verify(d):
    c = d.client()
    priv = import_ed(c, "ed-pk")
    pub = pub_of(priv)
    p = P11(d)
    s = p.session()
    k, kp = p.find(s, "ed-pk", CKO_PRIVATE_KEY), p.find(s, "ed-pk", CKO_PUBLIC_KEY)
    # (PyKCS11's C_Sign refuses empty data itself: the C test signs that)
    for n in (1, 64, 1000, 100000):
        msg = os.urandom(n)
        sig = bytes(s.sign(k, msg, PyKCS11.Mechanism(CKM_EDDSA)))
        assert sig == priv.sign(msg)
        assert s.verify(kp, msg, sig, PyKCS11.Mechanism(CKM_EDDSA))
        bad = bytes([sig[0] ^ 1]) + sig[1:]
        assert not s.verify(kp, msg, bad, PyKCS11.Mechanism(CKM_EDDSA))
    # Ed25519ctx and Ed25519ph: the same signatures as sigild's own (checked
    # against RFC 8032 by tests/client) and verified by sigild's verify
    msg = os.urandom(200)
    for ph, ctx in ((False, b"foo"), (True, b""), (True, b"ctx")):
        sig = bytes(s.sign(k, msg, eddsa(ph, ctx)))
        params = {"key": "ed-pk", "message": hashlib.sha512(msg).digest() if ph else msg}
        if ph:
            params["prehashed"] = True
        if ctx:
            params["context"] = ctx
        want = c.call("sign", dict(params, mode="ph" if ph else "ctx"))["signature"]
        assert sig == want, (ph, ctx)
        assert s.verify(kp, msg, sig, eddsa(ph, ctx))
        assert not s.verify(kp, msg + b"x", sig, eddsa(ph, ctx))
    # multi-part: Ed25519ph hashed here, pure kept for one request
    lib = p.lib.lib
    for mech, want in ((eddsa(True, b"ctx"), bytes(s.sign(k, msg, eddsa(True, b"ctx")))),
                       (PyKCS11.Mechanism(CKM_EDDSA), priv.sign(msg))):
        assert lib.C_SignInit(s.session, mech.to_native(), k) == PyKCS11.CKR_OK
        for i in range(0, len(msg), 37):
            assert lib.C_SignUpdate(s.session, PyKCS11.ckbytelist(msg[i:i + 37])) == PyKCS11.CKR_OK
        out = PyKCS11.ckbytelist()
        assert lib.C_SignFinal(s.session, out) == PyKCS11.CKR_OK  # the length
        assert lib.C_SignFinal(s.session, out) == PyKCS11.CKR_OK
        assert bytes(out) == want
        assert lib.C_VerifyInit(s.session, mech.to_native(), kp) == PyKCS11.CKR_OK
        for i in range(0, len(msg), 50):
            assert lib.C_VerifyUpdate(s.session, PyKCS11.ckbytelist(msg[i:i + 50])) == PyKCS11.CKR_OK
        assert lib.C_VerifyFinal(s.session, PyKCS11.ckbytelist(want)) == PyKCS11.CKR_OK
    c.close()
    s.closeSession()


def test_derive(d):
    c = d.client()
    xpriv = import_x(c, "x-dh")
    c.close()
    p = P11(d)
    s = p.session()
    k = p.find(s, "x-dh", CKO_PRIVATE_KEY)
    for der in (False, True):
        peer = X25519PrivateKey.generate()
        pp = pub_of(peer)
        mech = PyKCS11.ECDH1_DERIVE_Mechanism(b"\x04\x20" + pp if der else pp)
        tmpl = [(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_GENERIC_SECRET), (CKA_TOKEN, False),
                (CKA_SENSITIVE, False), (CKA_EXTRACTABLE, True), (CKA_LABEL, "shared")]
        h = s.deriveKey(k, tmpl, mech)
        value = bytes(s.getAttributeValue(h, [CKA_VALUE], allAsBinary=True)[0])
        assert value == peer.exchange(xpriv.public_key()) == xpriv.exchange(peer.public_key())
        assert s.getAttributeValue(h, [CKA_VALUE_LEN])[0] == 32
        s.destroyObject(h)
    # a sensitive (the default) secret keeps its value inside
    peer = X25519PrivateKey.generate()
    h = s.deriveKey(k, [(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_GENERIC_SECRET)],
                    PyKCS11.ECDH1_DERIVE_Mechanism(pub_of(peer)))
    tmpl = PyKCS11.LowLevel.ckattrlist(1)
    tmpl[0].SetType(CKA_VALUE)
    assert p.lib.lib.C_GetAttributeValue(s.session, h, tmpl) == PyKCS11.CKR_ATTRIBUTE_SENSITIVE
    assert s.getAttributeValue(h, [CKA_SENSITIVE, CKA_EXTRACTABLE]) == [True, False]
    # a session object: gone with its session
    s.closeSession()
    s = p.session()
    assert s.findObjects([(CKA_CLASS, CKO_SECRET_KEY)]) == []
    # errors
    k = p.find(s, "x-dh", CKO_PRIVATE_KEY)
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.deriveKey, k, [], PyKCS11.ECDH1_DERIVE_Mechanism(b"\x01" * 31))
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.deriveKey, k, [],
               PyKCS11.ECDH1_DERIVE_Mechanism(pub_of(peer), kdf=PyKCS11.CKD_SHA1_KDF))
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", s.deriveKey, k, [(CKA_TOKEN, True)],
               PyKCS11.ECDH1_DERIVE_Mechanism(pub_of(peer)))
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", s.deriveKey, k, [(CKA_CLASS, CKO_PUBLIC_KEY)],
               PyKCS11.ECDH1_DERIVE_Mechanism(pub_of(peer)))
    expect_ckr("CKR_ATTRIBUTE_VALUE_INVALID", s.deriveKey, k, [(CKA_VALUE_LEN, 33)],
               PyKCS11.ECDH1_DERIVE_Mechanism(pub_of(peer)))
    # a small-order peer: sigild refuses the all-zero result
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.deriveKey, k, [], PyKCS11.ECDH1_DERIVE_Mechanism(bytes(32)))
    s.closeSession()


def test_generate_key_pair(d):
    p = P11(d)
    s = p.session()
    c = d.client()
    for mech, oid, label, kind in ((CKM_EC_EDWARDS_KEY_PAIR_GEN, OID_ED, "gen-ed", "ed25519"),
                                   (CKM_EC_MONTGOMERY_KEY_PAIR_GEN, OID_X, "gen-x", "x25519")):
        pub, priv = s.generateKeyPair([(CKA_EC_PARAMS, oid), (CKA_LABEL, label), (CKA_TOKEN, True)],
                                      [(CKA_LABEL, label), (CKA_TOKEN, True), (CKA_SENSITIVE, True)],
                                      PyKCS11.Mechanism(mech))
        k = c.call("key.public", {"label": label})["key"]
        assert k["type"] == kind
        assert bytes(s.getAttributeValue(pub, [CKA_EC_POINT], allAsBinary=True)[0]) == b"\x04\x20" + k["public_key"]
        assert bytes(s.getAttributeValue(priv, [CKA_ID], allAsBinary=True)[0]) == ckid(k)
    msg = b"generated"
    pk = c.call("key.public", {"label": "gen-ed"})["key"]["public_key"]
    h = p.find(s, "gen-ed", CKO_PRIVATE_KEY)
    Ed25519PublicKey.from_public_bytes(pk).verify(bytes(s.sign(h, msg, PyKCS11.Mechanism(CKM_EDDSA))), msg)
    # the printable curve names
    s.generateKeyPair([(CKA_EC_PARAMS, b"\x13\x0cedwards25519"), (CKA_LABEL, "gen-ed2")], [],
                      PyKCS11.Mechanism(CKM_EC_EDWARDS_KEY_PAIR_GEN))
    c.call("key.public", {"label": "gen-ed2"})
    # C_DestroyObject deletes the key in sigild
    s.destroyObject(p.find(s, "gen-ed2", CKO_PUBLIC_KEY))
    c.expect_error("not_found", "key.public", {"label": "gen-ed2"})
    assert s.findObjects([(CKA_LABEL, "gen-ed2")]) == []
    # CKA_TOKEN false: a sigild key that lives as long as the session
    s2 = p.session()
    pub, priv = s2.generateKeyPair([(CKA_TOKEN, False), (CKA_LABEL, "eph")], [(CKA_TOKEN, False)],
                                   PyKCS11.Mechanism(CKM_EC_EDWARDS_KEY_PAIR_GEN))
    assert s2.getAttributeValue(priv, [CKA_TOKEN]) == [False]
    c.call("key.public", {"label": "eph"})
    s2.sign(priv, b"x", PyKCS11.Mechanism(CKM_EDDSA))
    s2.closeSession()
    c.expect_error("not_found", "key.public", {"label": "eph"})
    # without a label: one is made up
    before = {k["label"] for k in c.call("key.list")["keys"]}
    s.generateKeyPair([], [], PyKCS11.Mechanism(CKM_EC_EDWARDS_KEY_PAIR_GEN))
    new = {k["label"] for k in c.call("key.list")["keys"]} - before
    assert len(new) == 1 and next(iter(new)).startswith("p11-"), new
    # errors
    gen = s.generateKeyPair
    ed = PyKCS11.Mechanism(CKM_EC_EDWARDS_KEY_PAIR_GEN)
    expect_ckr("CKR_CURVE_NOT_SUPPORTED", gen, [(CKA_EC_PARAMS, OID_X)], [], ed)
    expect_ckr("CKR_CURVE_NOT_SUPPORTED", gen, [(CKA_EC_PARAMS, bytes.fromhex("06082a8648ce3d030107"))], [], ed)
    expect_ckr("CKR_ATTRIBUTE_VALUE_INVALID", gen, [(CKA_LABEL, "bad label")], [], ed)
    expect_ckr("CKR_ATTRIBUTE_VALUE_INVALID", gen, [(CKA_LABEL, "x" * 65)], [], ed)
    expect_ckr("CKR_ATTRIBUTE_VALUE_INVALID", gen, [(CKA_LABEL, "gen-ed")], [], ed)  # exists
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", gen, [(CKA_LABEL, "a1")], [(CKA_LABEL, "a2")], ed)
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", gen, [], [(CKA_EXTRACTABLE, True)], ed)
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", gen, [], [(CKA_SENSITIVE, False)], ed)
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", gen, [(CKA_KEY_TYPE, CKK_EC_MONTGOMERY)], [], ed)
    expect_ckr("CKR_TEMPLATE_INCONSISTENT", gen, [(CKA_TOKEN, True)], [(CKA_TOKEN, False)], ed)
    expect_ckr("CKR_MECHANISM_INVALID", gen, [], [], PyKCS11.Mechanism(PyKCS11.CKM_EC_KEY_PAIR_GEN))
    ro = p.session(rw=False)
    expect_ckr("CKR_SESSION_READ_ONLY", ro.generateKeyPair, [(CKA_LABEL, "ro")], [], ed)
    expect_ckr("CKR_SESSION_READ_ONLY", ro.destroyObject, p.find(ro, "gen-ed", CKO_PRIVATE_KEY))
    ro.closeSession()
    c.close()
    s.closeSession()


def test_sign_errors(d):
    c = d.client()
    import_ed(c, "ed-err")
    import_x(c, "x-err")
    c.call("key.generate", {"type": "ed25519", "label": "ed-pol", "policy": {"uids": [4242]}})
    p = P11(d)
    s = p.session()
    k = p.find(s, "ed-err", CKO_PRIVATE_KEY)
    kp = p.find(s, "ed-err", CKO_PUBLIC_KEY)
    x = p.find(s, "x-err", CKO_PRIVATE_KEY)
    m = PyKCS11.Mechanism(CKM_EDDSA)
    expect_ckr("CKR_MECHANISM_INVALID", s.sign, k, b"m", PyKCS11.Mechanism(PyKCS11.CKM_ECDSA))
    expect_ckr("CKR_KEY_FUNCTION_NOT_PERMITTED", s.sign, x, b"m", m)
    expect_ckr("CKR_KEY_TYPE_INCONSISTENT", s.sign, kp, b"m", m)
    bogus = PyKCS11.CK_OBJECT_HANDLE(s)
    bogus.assign(99999)
    expect_ckr("CKR_KEY_HANDLE_INVALID", s.sign, bogus, b"m", m)
    expect_ckr("CKR_KEY_TYPE_INCONSISTENT", s.deriveKey, k, [], PyKCS11.ECDH1_DERIVE_Mechanism(bytes(range(32))))
    # Ed25519ctx needs a context; at most 255 bytes
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.sign, k, b"m", eddsa(False, b""))
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.sign, k, b"m", eddsa(False, b"c" * 256))
    expect_ckr("CKR_MECHANISM_PARAM_INVALID", s.sign, k, b"m", PyKCS11.Mechanism(CKM_EDDSA, b"\x00" * 5))
    # a key's policy refuses this uid: denied
    expect_ckr("CKR_KEY_FUNCTION_NOT_PERMITTED", s.sign, p.find(s, "ed-pol", CKO_PRIVATE_KEY), b"m", m)
    # verify: wrong length, wrong signature
    expect_ckr("CKR_SIGNATURE_LEN_RANGE", s.verify, kp, b"m", b"\x00" * 63, m)
    assert s.verify(kp, b"m", b"\x00" * 64, m) is False
    # an operation already active
    lib = p.lib.lib
    assert lib.C_SignInit(s.session, m.to_native(), k) == PyKCS11.CKR_OK
    assert lib.C_SignInit(s.session, m.to_native(), k) == PyKCS11.CKR_OPERATION_ACTIVE
    # pure Ed25519 after C_SignUpdate goes through C_SignFinal only
    assert lib.C_SignUpdate(s.session, PyKCS11.ckbytelist(b"ab")) == PyKCS11.CKR_OK
    out = PyKCS11.ckbytelist()
    assert lib.C_Sign(s.session, PyKCS11.ckbytelist(b"ab"), out) == PyKCS11.CKR_OPERATION_NOT_INITIALIZED
    assert lib.C_SignFinal(s.session, out) == PyKCS11.CKR_OK
    assert lib.C_SignFinal(s.session, out) == PyKCS11.CKR_OK
    assert lib.C_SignFinal(s.session, out) == PyKCS11.CKR_OPERATION_NOT_INITIALIZED
    # what the module does not do
    expect_ckr("CKR_FUNCTION_NOT_SUPPORTED", s.encrypt, kp, b"m", PyKCS11.Mechanism(PyKCS11.CKM_RSA_PKCS))
    expect_ckr("CKR_FUNCTION_NOT_SUPPORTED", s.createObject, [(CKA_CLASS, CKO_SECRET_KEY)])
    expect_ckr("CKR_FUNCTION_NOT_SUPPORTED", s.digest, b"m")
    expect_ckr("CKR_FUNCTION_NOT_SUPPORTED", s.setAttributeValue, k, [(CKA_LABEL, "x")])
    expect_ckr("CKR_MECHANISM_INVALID", p.lib.getMechanismInfo, p.slot, "CKM_SHA256")
    expect_ckr("CKR_RANDOM_SEED_NOT_SUPPORTED", s.seedRandom, b"seed")
    expect_ckr("CKR_USER_TYPE_INVALID", s.login, "pin", PyKCS11.CKU_SO)
    r = s.generateRandom(100)
    assert len(r) == 100 and len(set(r)) > 10
    s.closeSession()
    expect_ckr("CKR_SESSION_HANDLE_INVALID", s.sign, k, b"m", m)
    c.close()


def test_login_locked(d):
    """A sigild sealed under a passphrase: the token asks for login while it
    is locked; C_Login unlocks it with the PIN; C_Logout leaves it open."""
    c = d.client()
    c.call("unlock", {"passphrase": "correct horse"})  # the first unlock sets it
    import_ed(c, "ed-lock")
    c.call("lock")
    p = P11(d)
    from PyKCS11 import CKF_LOGIN_REQUIRED
    assert p.lib.getTokenInfo(p.slot).flags & CKF_LOGIN_REQUIRED
    s = p.session()
    k = p.find(s, "ed-lock", CKO_PRIVATE_KEY)
    m = PyKCS11.Mechanism(CKM_EDDSA)
    expect_ckr("CKR_USER_NOT_LOGGED_IN", s.sign, k, b"m", m)
    expect_ckr("CKR_PIN_INCORRECT", s.login, "wrong horse")
    assert c.call("status")["locked"] is True
    s.login("correct horse")
    assert c.call("status")["locked"] is False
    assert not p.lib.getTokenInfo(p.slot).flags & CKF_LOGIN_REQUIRED
    assert s.getSessionInfo().state == PyKCS11.CKS_RW_USER_FUNCTIONS
    expect_ckr("CKR_USER_ALREADY_LOGGED_IN", s.login, "correct horse")
    s.sign(k, b"m", m)
    s.logout()
    assert c.call("status")["locked"] is False
    expect_ckr("CKR_USER_NOT_LOGGED_IN", s.logout)
    s.sign(k, b"m", m)
    s.closeSession()
    c.close()


def test_daemon_down_and_back(d):
    c = d.client()
    priv = import_ed(c, "ed-down")
    c.close()
    p = P11(d)
    s = p.session()
    k = p.find(s, "ed-down", CKO_PRIVATE_KEY)
    m = PyKCS11.Mechanism(CKM_EDDSA)
    s.sign(k, b"before", m)
    d.stop()
    try:
        s.sign(k, b"down", m)
        raise AssertionError("signed without sigild")
    except PyKCS11Error as e:
        assert e.value in (PyKCS11.CKR_DEVICE_REMOVED, PyKCS11.CKR_TOKEN_NOT_PRESENT), PyKCS11.CKR[e.value]
    expect_ckr("CKR_TOKEN_NOT_PRESENT", s.sign, k, b"down", m)
    assert p.lib.getSlotList(tokenPresent=True) == []
    assert p.lib.getSlotList(tokenPresent=False) == [0]
    expect_ckr("CKR_TOKEN_NOT_PRESENT", p.lib.getTokenInfo, 0)
    expect_ckr("CKR_TOKEN_NOT_PRESENT", p.lib.openSession, 0, CKF_SERIAL_SESSION)
    d.start()
    assert bytes(s.sign(k, b"after", m)) == priv.sign(b"after")
    assert p.lib.getSlotList(tokenPresent=True) == [0]
    s.closeSession()


def test_buffers_and_arguments(d):
    """The two-call convention and NULL arguments, through PyKCS11's low
    level and, for what PyKCS11 never passes, ctypes on the same loaded
    module (the same instance: one dlopen handle)."""
    c = d.client()
    priv = import_ed(c, "ed-buf")
    c.close()
    p = P11(d)
    s = p.session()
    k, kp = p.find(s, "ed-buf", CKO_PRIVATE_KEY), p.find(s, "ed-buf", CKO_PUBLIC_KEY)
    lib = p.lib.lib
    # C_GetAttributeValue: a 4-byte buffer for the 34-byte CKA_EC_POINT
    tmpl = PyKCS11.LowLevel.ckattrlist(2)
    tmpl[0].SetBin(CKA_EC_POINT, PyKCS11.ckbytelist(bytes(4)))
    tmpl[1].SetBin(CKA_LABEL, PyKCS11.ckbytelist(bytes(16)))
    assert lib.C_GetAttributeValue(s.session, kp, tmpl) == PyKCS11.CKR_BUFFER_TOO_SMALL
    assert bytes(tmpl[1].GetBin()) == b"ed-buf"  # the others are still filled
    m = ctypes.CDLL(MODULE)
    UL = ctypes.c_ulong
    n = UL(0)
    assert m.C_GetSlotList(ctypes.c_ubyte(1), None, None) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_GetSlotList(ctypes.c_ubyte(1), (UL * 1)(), ctypes.byref(n)) == PyKCS11.CKR_BUFFER_TOO_SMALL
    assert n.value == 1
    n = UL(1)
    assert m.C_GetMechanismList(UL(0), (UL * 1)(), ctypes.byref(n)) == PyKCS11.CKR_BUFFER_TOO_SMALL
    assert n.value == 4
    assert m.C_GetTokenInfo(UL(0), None) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_GetInfo(None) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_OpenSession(UL(0), UL(CKF_SERIAL_SESSION), None, None, None) == PyKCS11.CKR_ARGUMENTS_BAD
    h = UL(s.session.value())
    # C_Sign: length query, too small, NULL length (ends the operation)
    mech = PyKCS11.Mechanism(CKM_EDDSA).to_native()
    msg = b"two calls"
    sig = ctypes.create_string_buffer(64)
    for rv_want, buf, length, still in ((PyKCS11.CKR_OK, None, 0, True),
                                        (PyKCS11.CKR_BUFFER_TOO_SMALL, sig, 63, True),
                                        (PyKCS11.CKR_ARGUMENTS_BAD, sig, None, False)):
        assert lib.C_SignInit(s.session, mech, k) == PyKCS11.CKR_OK
        n = UL(length or 0)
        rv = m.C_Sign(h, msg, UL(len(msg)), buf, ctypes.byref(n) if length is not None else None)
        assert rv == rv_want, (PyKCS11.CKR[rv], rv_want)
        if rv_want != PyKCS11.CKR_ARGUMENTS_BAD:
            assert n.value == 64
        n = UL(64)
        rv = m.C_Sign(h, msg, UL(len(msg)), sig, ctypes.byref(n))
        assert rv == (PyKCS11.CKR_OK if still else PyKCS11.CKR_OPERATION_NOT_INITIALIZED), PyKCS11.CKR[rv]
        if still:
            assert sig.raw == priv.sign(msg)
    assert m.C_GenerateRandom(h, None, UL(8)) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_Login(h, UL(PyKCS11.CKU_USER), None, UL(0)) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_FindObjectsInit(h, None, UL(1)) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_GetAttributeValue(h, UL(kp.value()), None, UL(1)) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_DeriveKey(h, None, UL(kp.value()), None, UL(0), None) == PyKCS11.CKR_ARGUMENTS_BAD
    assert m.C_GenerateKeyPair(h, None, None, UL(0), None, UL(0), None, None) == PyKCS11.CKR_ARGUMENTS_BAD
    s.closeSession()


TESTS = [
    (test_pkcs11_tool_list, ()),
    (test_pkcs11_tool_sign, ("tmp",)),
    (test_pkcs11_tool_keypairgen, ("tmp",)),
    (test_p11tool_list_all, ()),
    (test_certtool_self_signed, ("tmp",)),
    (test_p11kit_module_file, ("tmp",)),
    (test_attributes, ()),
    (test_sign_verify, ()),
    (test_derive, ()),
    (test_generate_key_pair, ()),
    (test_sign_errors, ()),
    (test_buffers_and_arguments, ()),
    (test_login_locked, ("passphrase",)),
    (test_daemon_down_and_back, ()),
]


def main():
    assert "SIGILD" in os.environ and MODULE, "SIGILD and SIGIL_PKCS11 must be set (run through meson test)"
    only = sys.argv[1:]
    tests = [t for t in TESTS if not only or t[0].__name__ in only]
    print(f"1..{len(tests)}", flush=True)
    failed = 0
    for n, (t, opts) in enumerate(tests, 1):
        tmp = tempfile.mkdtemp(prefix="sigil-pkcs11-")
        os.chmod(tmp, 0o700)
        d = Daemon(tmp, args=["--passphrase", *FAST_PW] if "passphrase" in opts else ())

        def one():
            d.start()
            t(d, tmp) if "tmp" in opts else t(d)
        one.__name__ = t.__name__
        try:
            if not sigiltest.tap_run(n, one):
                failed += 1
                if os.path.exists(d.logpath):
                    for line in open(d.logpath, errors="replace").read().splitlines()[-30:]:
                        print("# sigild: " + line, flush=True)
        finally:
            d.stop()
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
