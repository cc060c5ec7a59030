#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_sshcert.py - `sigil ssh-cert` against OpenSSH's own tools.

A CA key in the real sigild signs user and host certificates; ssh-keygen -L
must read them, a loopback sshd with TrustedUserCAKeys must accept a login
with the user certificate (and refuse a wrong principal, an expired
certificate, no certificate), and ssh with a known_hosts @cert-authority
line must accept the sshd's host certificate (and refuse another CA's).
Needs root, openssh-client and openssh-server: missing ones fail.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sshdharness as h  # noqa: E402

ID_OPTS = "-o IdentitiesOnly=yes -o IdentityAgent=none"


class Ctx:
    pass


def setup():
    h.require_tools()
    c = Ctx()
    c.dir = h.workdir("sigil-sshcert-")
    c.sigild = h.Sigild(c.dir)
    c.sigild.sigil("keygen ca")
    c.sigild.sigil("keygen otherca")
    h.run(f"{os.environ['SIGIL']} -s {c.sigild.sock} pubkey ca > {c.dir}/ca.pub", cwd=c.dir)
    h.run(f"{os.environ['SIGIL']} -s {c.sigild.sock} pubkey otherca > {c.dir}/otherca.pub", cwd=c.dir)
    h.run("ssh-keygen -q -t ed25519 -N '' -C alice@example -f user", cwd=c.dir)
    h.run("ssh-keygen -q -t ed25519 -N '' -f host", cwd=c.dir)
    return c


def cert(c, args, key="user.pub", check=True):
    return c.sigild.sigil(f"ssh-cert --ca ca {args} {key}", check=check)


def test_keygen_reads_user_cert(c):
    rc, out = cert(c, "-I alice-laptop -n root,alice -V -5m:+1h -z 42 -O force-command=/bin/true -O no-pty")
    assert "Signed user certificate" in out, out
    with open(f"{c.dir}/user-cert.pub") as f:
        text = f.read()
    assert text.startswith("ssh-ed25519-cert-v01@openssh.com ") and text.rstrip().endswith(" alice@example"), text
    _, out = h.run("ssh-keygen -L -f user-cert.pub", cwd=c.dir)
    _, fp = h.run("ssh-keygen -l -f ca.pub", cwd=c.dir)
    for want in ("ssh-ed25519-cert-v01@openssh.com user certificate", 'Key ID: "alice-laptop"', "Serial: 42",
                 "force-command /bin/true", "permit-agent-forwarding", fp.split()[1]):
        assert want in out, (want, out)
    assert "permit-pty" not in out, out
    principals = out.split("Principals:")[1].split("Critical Options:")[0].split()
    assert principals == ["root", "alice"], principals
    # a certificate is refused as the subject; so is a CA that is not there
    rc, out = c.sigild.sigil(f"ssh-cert --ca ca -I x -n root {c.dir}/user-cert.pub", check=False)
    assert rc == 2 and "certificate already" in out, (rc, out)
    rc, out = c.sigild.sigil(f"ssh-cert --ca nosuchkey -I x -n root {c.dir}/user.pub", check=False)
    assert rc == 4, (rc, out)
    rc, out = c.sigild.sigil(f"ssh-cert --ca ca -I x -n root -V 5:3 {c.dir}/user.pub", check=False)
    assert rc == 2 and "bad -V" in out, (rc, out)
    # an RSA key can be certified too (ssh-rsa-cert-v01), and -o names the output
    h.run("ssh-keygen -q -t rsa -b 2048 -N '' -f rsa", cwd=c.dir)
    cert(c, f"-I r -n root -o {c.dir}/rsa-c.pub", key=f"{c.dir}/rsa.pub")
    _, out = h.run("ssh-keygen -L -f rsa-c.pub", cwd=c.dir)
    assert "ssh-rsa-cert-v01@openssh.com user certificate" in out, out


def start_sshd(c):
    # the host certificate of the sshd, by the same CA
    cert(c, "-I testhost --host -n 127.0.0.1,localhost", key=f"{c.dir}/host.pub")
    _, out = h.run("ssh-keygen -L -f host-cert.pub", cwd=c.dir)
    assert "host certificate" in out, out
    return h.Sshd(c.dir, [f"TrustedUserCAKeys {c.dir}/ca.pub", "AuthorizedKeysFile none",
                          f"HostCertificate {c.dir}/host-cert.pub"], hostkeys=[f"HostKey {c.dir}/host"])


def test_trusted_user_ca_login(c):
    sshd = c.sshd = start_sshd(c)
    cert(c, "-I alice-laptop -n root,alice -V -5m:+1h")
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=user-cert.pub")
    assert ok, out + sshd.logtext()
    assert "alice-laptop" in sshd.logtext(), sshd.logtext()
    # no certificate: the plain key is not authorised
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=none")
    assert not ok, out
    # a certificate for other principals only
    cert(c, f"-I bob -n bob -o {c.dir}/bob-cert.pub")
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=bob-cert.pub")
    assert not ok, out
    # an expired one
    cert(c, f"-I old -n root -V -2d:-1d -o {c.dir}/old-cert.pub")
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=old-cert.pub")
    assert not ok, out
    # a force-command certificate runs its command whatever is asked
    cert(c, f"-I forced -n root -O force-command='echo forced-command' -o {c.dir}/forced-cert.pub")
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=forced-cert.pub", command="echo asked")
    assert ok and "forced-command" in out and "asked" not in out, out
    # another CA's certificate is not trusted
    c.sigild.sigil(f"ssh-cert --ca otherca -I other -n root -o {c.dir}/other-cert.pub {c.dir}/user.pub")
    ok, out = sshd.login(f"{ID_OPTS} -i user -o CertificateFile=other-cert.pub")
    assert not ok, out


def test_host_cert_known_hosts(c):
    sshd = c.sshd
    with open(f"{c.dir}/ca.pub") as f:
        ca = f.read().split()
    with open(f"{c.dir}/otherca.pub") as f:
        other = f.read().split()
    with open(f"{c.dir}/kh", "w") as f:
        f.write(f"@cert-authority * {ca[0]} {ca[1]}\n")
    with open(f"{c.dir}/kh-other", "w") as f:
        f.write(f"@cert-authority * {other[0]} {other[1]}\n")
    opts = f"{ID_OPTS} -i user -o CertificateFile=user-cert.pub -o HostKeyAlgorithms=ssh-ed25519-cert-v01@openssh.com"
    ok, out = sshd.login(opts, known_hosts=f"{c.dir}/kh")
    assert ok, out + sshd.logtext()
    ok, out = sshd.login(opts, known_hosts=f"{c.dir}/kh-other")
    assert not ok and "Host key verification failed" in out, out


def main():
    c = setup()
    try:
        return h.tap_main([test_keygen_reads_user_cert, test_trusted_user_ca_login, test_host_cert_known_hosts], c)
    finally:
        if getattr(c, "sshd", None):
            c.sshd.stop()
        c.sigild.stop()
        shutil.rmtree(c.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
