#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_agent_cert.py - OpenSSH certificates in sigild's agent.

`ssh-add id_ed25519` with id_ed25519-cert.pub beside it puts the key and
its certificate into sigild; ssh-add -L lists both; a login to a loopback
sshd that trusts only the CA (TrustedUserCAKeys, no authorized keys)
succeeds with the certificate only in sigil (no key files, IdentitiesOnly
no, SSH_AUTH_SOCK = sigil's agent socket); the certificate survives a
restart of sigild with its persisted key; removals behave as OpenSSH's
agent (the certificate alone, the plain key alone, both); a memory-only
key keeps its certificate in memory only; a certificate whose key is not
the key sent with it, and one with a bad CA signature, are refused.
Needs root, openssh-client and openssh-server: missing ones fail.
"""
import os
import shutil
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sshdharness as h  # noqa: E402

RAW = serialization.Encoding.Raw


class Ctx:
    pass


def setup():
    h.require_tools()
    c = Ctx()
    c.dir = h.workdir("sigil-agentcert-")
    c.sigild = h.Sigild(c.dir)
    c.sigild.sigil("keygen ca")
    h.run(f"{os.environ['SIGIL']} -s {c.sigild.sock} pubkey ca > ca.pub", cwd=c.dir)
    os.makedirs(f"{c.dir}/home")
    h.run("ssh-keygen -q -t ed25519 -N '' -C me@laptop -f home/id_ed25519", cwd=c.dir)
    c.sigild.sigil(f"ssh-cert --ca ca -I me-cert -n root home/id_ed25519.pub")
    c.sshd = h.Sshd(c.dir, [f"TrustedUserCAKeys {c.dir}/ca.pub", "AuthorizedKeysFile none"])
    return c


def add(c, args):
    return h.run(f"ssh-add {args}", env=c.sigild.env(), cwd=c.dir)[1]


def listing(c):
    rc, out = h.run("ssh-add -L", env=c.sigild.env(), check=False)
    return [line for line in out.splitlines() if line.startswith("ssh-")]


def login(c):
    """ssh with only the agent: no key files in reach, IdentitiesOnly=no."""
    return c.sshd.login("-o IdentitiesOnly=no -o IdentityFile=none -o CertificateFile=none",
                        env=c.sigild.env(HOME=f"{c.dir}/nohome"))


def test_add_lists_cert(c):
    out = add(c, "home/id_ed25519")
    assert "Certificate added" in out, out
    lines = listing(c)
    types = [line.split()[0] for line in lines]
    assert types.count("ssh-ed25519-cert-v01@openssh.com") == 1 and "ssh-ed25519" in types, lines
    with open(f"{c.dir}/home/id_ed25519-cert.pub") as f:
        cert = f.read().split()[1]
    assert any(line.split()[1] == cert for line in lines), lines
    # persisted beside the key: <state>/ssh-certs/<hex of the public key>
    assert len(os.listdir(f"{c.sigild.state}/ssh-certs")) == 1, os.listdir(f"{c.sigild.state}/ssh-certs")


def test_login_with_cert_only_in_sigil(c):
    # the key files go: the certificate and its key are only in sigild
    shutil.move(f"{c.dir}/home", f"{c.dir}/home.saved")
    ok, out = login(c)
    assert ok, out + c.sshd.logtext()[-3000:] + c.sigild.logtext()[-2000:]
    assert "me-cert" in c.sshd.logtext(), c.sshd.logtext()[-2000:]
    # ssh-keygen -Y sign with the certificate through the agent verifies
    shutil.move(f"{c.dir}/home.saved", f"{c.dir}/home")
    h.run("echo data > d.txt && rm -f d.txt.sig && ssh-keygen -Y sign -f home/id_ed25519-cert.pub -n file d.txt "
          "&& ssh-keygen -Y check-novalidate -n file -f home/id_ed25519.pub -s d.txt.sig < d.txt",
          env=c.sigild.env(), cwd=c.dir)


def test_cert_survives_restart(c):
    before = listing(c)
    c.sigild.stop()
    c.sigild = h.Sigild(c.dir)
    assert listing(c) == before, (listing(c), before)
    ok, out = login(c)
    assert ok, out


def test_remove_as_openssh(c):
    ak = h.AgentClient(c.sigild.agent)
    cert_blob = h.pubkey_blob(f"{c.dir}/home/id_ed25519-cert.pub")
    key_blob = h.pubkey_blob(f"{c.dir}/home/id_ed25519.pub")
    # the certificate alone: the plain key stays, the login fails
    assert ak.request(bytes([18]) + h.sstr(cert_blob)) == bytes([6])
    assert [b for b, _ in ak.identities()].count(cert_blob) == 0
    assert key_blob in [b for b, _ in ak.identities()]
    ok, out = login(c)
    assert not ok, out
    assert ak.request(bytes([18]) + h.sstr(cert_blob)) == bytes([5])  # not there any more
    # back, then the plain key alone: the certificate stays and still logs in
    add(c, "home/id_ed25519")
    assert ak.request(bytes([18]) + h.sstr(key_blob)) == bytes([6])
    ids = [b for b, _ in ak.identities()]
    assert cert_blob in ids and key_blob not in ids, ids
    ok, out = login(c)
    assert ok, out
    # a signature by the removed plain identity is refused, the certificate's works
    sign = lambda blob: ak.request(bytes([13]) + h.sstr(blob) + h.sstr(b"data") + (0).to_bytes(4, "big"))
    assert sign(key_blob) == bytes([5])
    assert sign(cert_blob)[0] == 14
    # then the certificate: the key is gone from sigild altogether
    assert ak.request(bytes([18]) + h.sstr(cert_blob)) == bytes([6])
    assert ak.identities() == [] or all(b not in (key_blob, cert_blob) for b, _ in ak.identities())
    _, out = c.sigild.sigil("list")
    assert "id_ed25519" not in out and "me@laptop" not in out, out
    assert os.listdir(f"{c.sigild.state}/ssh-certs") == [], os.listdir(f"{c.sigild.state}/ssh-certs")
    # ssh-add -d with both files removes both; -D removes everything
    add(c, "home/id_ed25519")
    add(c, "-d home/id_ed25519")
    assert listing(c) == [l for l in listing(c) if "me@laptop" not in l]
    assert all("me@laptop" not in l for l in listing(c)), listing(c)
    add(c, "home/id_ed25519")
    add(c, "-D")
    assert listing(c) == [], listing(c)
    ak.close()


def test_memory_only_key_keeps_cert_in_memory(c):
    add(c, "-t 600 home/id_ed25519")
    assert any(l.startswith("ssh-ed25519-cert-v01@openssh.com") for l in listing(c)), listing(c)
    assert os.listdir(f"{c.sigild.state}/ssh-certs") == [], os.listdir(f"{c.sigild.state}/ssh-certs")
    ok, out = login(c)
    assert ok, out
    add(c, "-D")


def test_destination_constrained_cert(c):
    # ssh-add -h: the key and its certificate restricted to this sshd's host
    # key; the userauth request sigild signs names the certificate
    with open(f"{c.sshd.hostkey}.pub") as f:
        hk = f.read().split()
    with open(f"{c.dir}/kh", "w") as f:
        f.write(f"testhost {hk[0]} {hk[1]}\n")
    with open(f"{c.dir}/kh-other", "w") as f:
        f.write(f"otherhost {hk[0]} AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n")
    add(c, f"-H {c.dir}/kh -h testhost home/id_ed25519")
    ok, out = login(c)
    assert ok, out + c.sshd.logtext()[-2000:] + c.sigild.logtext()[-2000:]
    add(c, "-D")
    add(c, f"-H {c.dir}/kh-other -h otherhost home/id_ed25519")
    ok, out = login(c)
    assert not ok, out
    add(c, "-D")


def raw_add(ak, cert_blob, priv, comment=b"raw"):
    seed = priv.private_bytes(RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    pub = priv.public_key().public_bytes(RAW, serialization.PublicFormat.Raw)
    return ak.request(bytes([17]) + h.sstr("ssh-ed25519-cert-v01@openssh.com") + h.sstr(cert_blob) +
                      h.sstr(pub) + h.sstr(seed + pub) + h.sstr(comment))


def test_mismatched_and_forged_refused(c):
    a, b = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    # (ssh-add -D above deleted every key this peer sees, the CA too)
    c.sigild.sigil("keygen ca2")
    for name, k in (("a", a), ("b", b)):
        pub = k.public_key().public_bytes(RAW, serialization.PublicFormat.Raw)
        import base64
        with open(f"{c.dir}/{name}.pub", "w") as f:
            f.write("ssh-ed25519 " + base64.b64encode(h.sstr("ssh-ed25519") + h.sstr(pub)).decode() + "\n")
        c.sigild.sigil(f"ssh-cert --ca ca2 -I {name} -n root {c.dir}/{name}.pub")
    cert_a = h.pubkey_blob(f"{c.dir}/a-cert.pub")
    cert_b = h.pubkey_blob(f"{c.dir}/b-cert.pub")
    ak = h.AgentClient(c.sigild.agent)
    # b's certificate with a's key: refused, and nothing was added
    assert raw_add(ak, cert_b, a) == bytes([5])
    ca2 = [blob for blob, _ in ak.identities()]
    assert len(ca2) == 1, ca2
    # a forged CA signature: refused
    forged = bytearray(cert_a)
    forged[-5] ^= 0x40
    assert raw_add(ak, bytes(forged), a) == bytes([5])
    assert [blob for blob, _ in ak.identities()] == ca2
    # the right pair is taken: the key and its certificate
    assert raw_add(ak, cert_a, a) == bytes([6])
    blobs = [blob for blob, _ in ak.identities()]
    assert cert_a in blobs and len(blobs) == 3, blobs
    assert ak.request(bytes([19])) == bytes([6])
    assert ak.identities() == []
    ak.close()


def test_main_socket_delete_takes_certs(c):
    """sigil delete on the main socket goes through ops.c's one removal
    path: the key's certificates and their file in ssh-certs/ go too."""
    certs = f"{c.sigild.state}/ssh-certs"
    add(c, "home/id_ed25519")
    assert len(os.listdir(certs)) == 1, os.listdir(certs)
    label = [line for line in listing(c) if line.startswith("ssh-ed25519 ")][0].split()[2]
    c.sigild.sigil(f"delete {label}")
    assert os.listdir(certs) == [], os.listdir(certs)
    assert listing(c) == [], listing(c)


def main():
    c = setup()
    try:
        return h.tap_main([test_add_lists_cert, test_login_with_cert_only_in_sigil, test_cert_survives_restart,
                           test_remove_as_openssh, test_memory_only_key_keeps_cert_in_memory,
                           test_destination_constrained_cert, test_mismatched_and_forged_refused,
                           test_main_socket_delete_takes_certs], c)
    finally:
        c.sshd.stop()
        c.sigild.stop()
        shutil.rmtree(c.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
