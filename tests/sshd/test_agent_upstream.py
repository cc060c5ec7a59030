#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_agent_upstream.py - Debian's ssh-agent as sigild's upstream agent.

The upstream (ssh-agent -D -a SOCK) holds an RSA and an ECDSA key, sigild
(--ssh-agent-upstream SOCK) an Ed25519 key. Through sigil's agent socket:
ssh-add -L lists all three (sigil's first); ssh-keygen -Y sign with the
RSA key verifies; a login to a loopback sshd with the RSA key succeeds,
also with the key restricted to that host (ssh-add -h: the session-bind
must reach the upstream); ssh-add of a new ECDSA key lands in the
upstream and ssh-add -d removes it there; LOCK and UNLOCK reach both;
relayed operations are audited as op=relay; with the upstream stopped
(SIGSTOP) or killed, sigil's key still lists, signs and logs in.
Needs root, openssh-client and openssh-server: missing ones fail.
"""
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sshdharness as h  # noqa: E402


class Ctx:
    pass


def start_upstream(c):
    c.up_sock = f"{c.dir}/upstream.sock"
    c.up_log = open(f"{c.dir}/upstream.log", "ab")
    c.up = subprocess.Popen(["ssh-agent", "-D", "-a", c.up_sock], stdout=c.up_log, stderr=c.up_log,
                            env=h.clean_env(drop=("SSH_AUTH_SOCK", "SSH_AGENT_PID")))
    h.wait_for(lambda: os.path.exists(c.up_sock), "ssh-agent's socket")


def up_env(c):
    return h.clean_env(drop=("SSH_AGENT_PID",), SSH_AUTH_SOCK=c.up_sock)


def setup():
    h.require_tools()
    c = Ctx()
    c.dir = h.workdir("sigil-upstream-")
    for t, name in (("rsa -b 2048", "id_rsa"), ("ecdsa", "id_ecdsa"), ("ecdsa", "id_ecdsa2"),
                    ("ed25519", "id_ed25519")):
        h.run(f"ssh-keygen -q -t {t} -N '' -C {name} -f {name}", cwd=c.dir)
    # public halves alone (ssh-keygen -Y sign would use a private key file
    # beside the .pub when the agent refuses)
    os.makedirs(f"{c.dir}/pubs")
    for name in ("id_rsa", "id_ecdsa", "id_ecdsa2", "id_ed25519"):
        shutil.copy(f"{c.dir}/{name}.pub", f"{c.dir}/pubs/{name}.pub")
    start_upstream(c)
    h.run("ssh-add id_rsa id_ecdsa", env=up_env(c), cwd=c.dir)
    c.sigild = h.Sigild(c.dir, extra=("--ssh-agent-upstream", c.up_sock))
    h.run("ssh-add id_ed25519", env=c.sigild.env(), cwd=c.dir)
    with open(f"{c.dir}/authorized", "w") as f:
        for name in ("id_rsa", "id_ed25519"):
            with open(f"{c.dir}/{name}.pub") as p:
                f.write(p.read())
    c.sshd = h.Sshd(c.dir, [f"AuthorizedKeysFile {c.dir}/authorized"])
    return c


def listing(c, env=None):
    _, out = h.run("ssh-add -L", env=env or c.sigild.env(), check=False)
    return [line.split()[2] if len(line.split()) > 2 else line for line in out.splitlines()
            if line.startswith(("ssh-", "ecdsa-"))]


def login(c, key):
    """ssh as root with only the agent, offering only key's public half."""
    return c.sshd.login(f"-o IdentitiesOnly=yes -o IdentityFile={c.dir}/pubs/{key}.pub",
                        env=c.sigild.env(HOME=f"{c.dir}/nohome"))


def test_list_merged(c):
    names = listing(c)
    assert names == ["id_ed25519", "id_rsa", "id_ecdsa"], names


def test_sign_with_rsa_verifies(c):
    h.run("echo release > data.txt && rm -f data.txt.sig && ssh-keygen -Y sign -f pubs/id_rsa.pub -n file data.txt",
          env=c.sigild.env(), cwd=c.dir)
    with open(f"{c.dir}/id_rsa.pub") as p:
        pub = p.read().split()
    with open(f"{c.dir}/allowed", "w") as f:
        f.write(f"rsa-signer {pub[0]} {pub[1]}\n")
    h.run("ssh-keygen -Y verify -f allowed -I rsa-signer -n file -s data.txt.sig < data.txt", cwd=c.dir)
    _, audit = c.sigild.sigil("audit")
    _, fp = h.run("ssh-keygen -l -f id_rsa.pub", cwd=c.dir)
    assert any("op=relay" in l and "result=ok" in l and fp.split()[1] in l and '"sign"' in l
               for l in audit.splitlines()), audit


def test_login_with_rsa(c):
    ok, out = login(c, "id_rsa")
    assert ok, out + c.sshd.logtext()[-2000:] + c.sigild.logtext()[-2000:]
    ok, out = login(c, "id_ed25519")
    assert ok, out


def test_session_bind_reaches_upstream(c):
    # the RSA key again, restricted to this sshd's host key: the upstream
    # signs only if ssh's session-bind reached it through sigil
    with open(f"{c.dir}/{os.path.basename(c.sshd.hostkey)}.pub") as f:
        hk = f.read().split()
    with open(f"{c.dir}/kh", "w") as f:
        f.write(f"testhost {hk[0]} {hk[1]}\n")
    h.run("ssh-add -d id_rsa.pub", env=c.sigild.env(), cwd=c.dir)
    assert "id_rsa" not in listing(c, up_env(c)), listing(c, up_env(c))
    h.run("ssh-add -H kh -h testhost id_rsa", env=c.sigild.env(), cwd=c.dir)
    ok, out = login(c, "id_rsa")
    assert ok, out + c.sshd.logtext()[-2000:]
    # restricted to another host: the upstream refuses
    h.run("ssh-keygen -q -t ed25519 -N '' -f otherhost", cwd=c.dir)
    with open(f"{c.dir}/otherhost.pub") as f:
        ok_ = f.read().split()
    with open(f"{c.dir}/kh2", "w") as f:
        f.write(f"otherhost {ok_[0]} {ok_[1]}\n")
    h.run("ssh-add -d id_rsa.pub && ssh-add -H kh2 -h otherhost id_rsa", env=c.sigild.env(), cwd=c.dir)
    ok, out = login(c, "id_rsa")
    assert not ok, out
    h.run("ssh-add -d id_rsa.pub && ssh-add id_rsa", env=c.sigild.env(), cwd=c.dir)


def test_add_and_remove_land_upstream(c):
    h.run("ssh-add id_ecdsa2", env=c.sigild.env(), cwd=c.dir)
    assert "id_ecdsa2" in listing(c, up_env(c)), listing(c, up_env(c))
    _, out = c.sigild.sigil("list")
    assert "id_ecdsa2" not in out, out
    assert "id_ecdsa2" in listing(c)
    h.run("ssh-add -d id_ecdsa2.pub", env=c.sigild.env(), cwd=c.dir)
    assert "id_ecdsa2" not in listing(c, up_env(c)), listing(c, up_env(c))
    _, audit = c.sigild.sigil("audit")
    assert any("op=relay" in l and "add ecdsa-sha2-nistp256" in l for l in audit.splitlines()), audit
    assert any("op=relay" in l and '"remove"' in l for l in audit.splitlines()), audit


def test_lock_unlock_reach_both(c):
    ak = h.AgentClient(c.sigild.agent)
    assert ak.request(bytes([22]) + h.sstr("pw")) == bytes([6])
    assert ak.identities() == []
    # the copy reached the upstream: locked, it lists nothing
    h.wait_for(lambda: listing(c, up_env(c)) == [], "the upstream to be locked")
    assert ak.request(bytes([23]) + h.sstr("pw")) == bytes([6])
    h.wait_for(lambda: len(listing(c, up_env(c))) == 2, "the upstream to be unlocked")
    names = [cm for _, cm in ak.identities()]
    assert names[0] == "id_ed25519" and sorted(names[1:]) == ["id_ecdsa", "id_rsa"], names
    # extension query: sigil's names (this ssh-agent answers query with FAILURE)
    ans = ak.request(bytes([27]) + h.sstr("query"))
    assert ans[0] == 29 and b"session-bind@openssh.com" in ans and ans.count(b"query") == 2, ans
    ak.close()


def sigil_key_works(c):
    assert listing(c)[:1] == ["id_ed25519"], listing(c)
    h.run("rm -f data.txt.sig && ssh-keygen -Y sign -f pubs/id_ed25519.pub -n file data.txt", env=c.sigild.env(),
          cwd=c.dir)
    ok, out = login(c, "id_ed25519")
    assert ok, out


def test_upstream_stopped(c):
    ak = h.AgentClient(c.sigild.agent)
    assert len(ak.identities()) == 3
    os.kill(c.up.pid, signal.SIGSTOP)
    try:
        # the listing waits for the upstream at most its bounded timeout,
        # then shows sigil's keys; later ones, on this connection and new
        # ones (ssh-add, ssh-keygen, ssh below), skip it
        assert [cm for _, cm in ak.identities()] == ["id_ed25519"]
        assert [cm for _, cm in ak.identities()] == ["id_ed25519"]
        sigil_key_works(c)
    finally:
        os.kill(c.up.pid, signal.SIGCONT)
    ak.close()
    # after a timeout no new upstream connection is opened for 30 s
    h.wait_for(lambda: len(listing(c)) == 3, "the upstream's keys to come back", timeout=60)


def test_upstream_killed(c):
    ak = h.AgentClient(c.sigild.agent)
    assert len(ak.identities()) == 3
    c.up.kill()
    c.up.wait()
    # the same connection, and new ones: sigil's key only, and it works
    assert [cm for _, cm in ak.identities()] == ["id_ed25519"]
    sigil_key_works(c)
    ok, out = login(c, "id_rsa")
    assert not ok, out
    rc, out = h.run("rm -f data.txt.sig && ssh-keygen -Y sign -f pubs/id_rsa.pub -n file data.txt", env=c.sigild.env(),
                    cwd=c.dir, check=False)
    assert rc != 0, out
    ak.close()
    assert c.sigild.proc.poll() is None


def main():
    c = setup()
    try:
        return h.tap_main([test_list_merged, test_sign_with_rsa_verifies, test_login_with_rsa,
                           test_session_bind_reaches_upstream, test_add_and_remove_land_upstream,
                           test_lock_unlock_reach_both, test_upstream_stopped, test_upstream_killed], c)
    finally:
        if c.up.poll() is None:
            c.up.kill()
            c.up.wait()
        c.sshd.stop()
        c.sigild.stop()
        if not os.environ.get("SIGIL_TEST_KEEP"):
            shutil.rmtree(c.dir, ignore_errors=True)
        else:
            print(f"# kept {c.dir}")


if __name__ == "__main__":
    sys.exit(main())
