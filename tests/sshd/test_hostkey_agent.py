#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_hostkey_agent.py - sshd's host key in sigild (HostKeyAgent).

The recipe of docs/ssh-agent.md: a sigil key made with `sigil keygen`,
its public half written with `sigil pubkey`, and sshd configured with
HostKeyAgent = sigil's agent socket and HostKey = that public key file.
A client that knows only that host key (StrictHostKeyChecking=yes) logs
in; sigild's audit shows the host key's signatures by /usr/sbin/sshd, the
only program the key's policy admits (ssh-keygen -Y sign is refused); with the key deleted
from sigild the same sshd can no longer prove its identity. Needs root,
openssh-client and openssh-server: missing ones fail.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sshdharness as h  # noqa: E402


class Ctx:
    pass


def setup():
    h.require_tools()
    c = Ctx()
    c.dir = h.workdir("sigil-hostkey-")
    c.sigild = h.Sigild(c.dir)
    # as docs/ssh-agent.md: only sshd may sign with it
    c.sigild.sigil("keygen sshd-host --allow-exe /usr/sbin/sshd")
    h.run(f"{os.environ['SIGIL']} -s {c.sigild.sock} pubkey sshd-host > host.pub", cwd=c.dir)
    h.run("ssh-keygen -q -t ed25519 -N '' -f user && cp user.pub authorized", cwd=c.dir)
    with open(f"{c.dir}/host.pub") as f:
        pub = f.read().split()
    with open(f"{c.dir}/known_hosts", "w") as f:
        f.write(f"* {pub[0]} {pub[1]}\n")
    c.sshd = h.Sshd(c.dir, [f"HostKeyAgent {c.sigild.agent}", f"AuthorizedKeysFile {c.dir}/authorized"],
                    hostkeys=[f"HostKey {c.dir}/host.pub"])
    return c


def login(c):
    return c.sshd.login("-o IdentitiesOnly=yes -o IdentityAgent=none -i user -o HostKeyAlgorithms=ssh-ed25519",
                        known_hosts=f"{c.dir}/known_hosts")


def test_login_with_host_key_in_sigil(c):
    ok, out = login(c)
    assert ok, out + c.sshd.logtext()[-3000:] + c.sigild.logtext()[-2000:]
    _, audit = c.sigild.sigil("audit")
    assert any("key=sshd-host" in l and "op=ssh-sign" in l and "result=ok" in l and "exe=/usr/sbin/sshd" in l
               for l in audit.splitlines()), audit


def test_other_programs_refused(c):
    # another root program cannot sign with the host key (its policy)
    rc, out = h.run("echo x > x.txt && rm -f x.txt.sig && ssh-keygen -Y sign -f host.pub -n file x.txt",
                    env=c.sigild.env(), cwd=c.dir, check=False)
    assert rc != 0 and not os.path.exists(f"{c.dir}/x.txt.sig"), out


def test_host_key_gone(c):
    c.sigild.sigil("delete sshd-host")
    ok, out = login(c)
    assert not ok, out


def main():
    c = setup()
    try:
        return h.tap_main([test_login_with_host_key_in_sigil, test_other_programs_refused, test_host_key_gone], c)
    finally:
        c.sshd.stop()
        c.sigild.stop()
        shutil.rmtree(c.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
