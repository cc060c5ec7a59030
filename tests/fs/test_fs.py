#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_fs.py - trust nothing on the filesystem (issue 17) and socket
activation of both sockets by name (issue 21).

Runs the real sigild ($SIGILD) and the sigil command ($SIGIL) as root, with
uid 65534 (setpriv) as the other local user: it owns pre-made socket
directories, squats socket paths with listeners that record every byte they
receive (they must receive nothing), and owns audit and master key files.
Each is refused with its message; FIFOs and devices as master key files do
not hang sigild (every step has a timeout). libsigil refuses a server of
another uid before it sends anything (exit 3 for the command) unless
SIGIL_SERVER_UID names it. Peer-supplied strings in log lines are escaped.
Output is TAP.
"""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import sigiltest  # noqa: E402

SIGILD = os.environ["SIGILD"]
SIGIL = os.environ["SIGIL"]
NOBODY = 65534
SETPRIV = shutil.which("setpriv")

# a listener that records what it receives: argv path, record file, ready file
FAKE = r"""
import os, socket, sys, threading
path, rec, ready = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(64)
lock = threading.Lock()
def serve(c):
    c.settimeout(5)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            with lock, open(rec, "ab") as f:
                f.write(d)
    except OSError:
        pass
    c.close()
open(ready, "w").close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def clean_env(**extra):
    return sigiltest.clean_env(drop=("CREDENTIALS_DIRECTORY", "SIGIL_SOCK", "SIGIL_SERVER_UID"), **extra)


def as_nobody(argv):
    assert SETPRIV, "setpriv (util-linux) is required"
    return [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]


class Fake:
    """A recording listener at path, run as uid (NOBODY or root)."""

    def __init__(self, path, recdir, uid=NOBODY):
        self.path = path
        self.rec = os.path.join(recdir, "rec-" + os.path.basename(path))
        ready = self.rec + ".ready"
        argv = ["/usr/bin/python3", "-c", FAKE, path, self.rec, ready]
        self.proc = subprocess.Popen(as_nobody(argv) if uid == NOBODY else argv)
        deadline = time.time() + 10
        while not os.path.exists(ready):
            assert self.proc.poll() is None, "the fake listener exited"
            assert time.time() < deadline, "the fake listener did not start"
            time.sleep(0.01)

    def received(self):
        try:
            return os.path.getsize(self.rec)
        except FileNotFoundError:
            return 0

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


def nobody_dir(path, mode):
    os.mkdir(path)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)
    return path


def refused(args, expect, env=None):
    """sigild with args must exit non-zero within 20 s, its log holding every
    string of expect. Returns the log."""
    r = subprocess.run([SIGILD, "--foreground", "--workers", "1", *args], env=env or clean_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
    log = r.stdout.decode("utf-8", "replace")
    assert r.returncode != 0, f"sigild started: {log}"
    for e in expect:
        assert e in log, f"{e!r} not in {log!r}"
    return log


class Daemon:
    def __init__(self, sock, state, args=(), env=None):
        self.sock = sock
        self.log = state + ".log"
        f = open(self.log, "wb")
        self.proc = subprocess.Popen([SIGILD, "--foreground", "--workers", "1", "--socket", sock, "--state-dir", state,
                                      *args], stdout=f, stderr=f, env=env or clean_env())
        f.close()
        deadline = time.time() + 15
        while True:
            assert self.proc.poll() is None, f"sigild exited: {self.logtext()}"
            try:
                sigiltest.Client(sock).close()
                break
            except OSError:
                assert time.time() < deadline, "sigild did not start"
                time.sleep(0.01)

    def logtext(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(20) == 0


def sigil(args, env=None, timeout=20):
    return subprocess.run([SIGIL, *args], env=env or clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


# ---- socket directories -------------------------------------------------------

def test_socket_dir_of_another_uid(tmp):
    for mode in (0o777, 0o755):
        d = nobody_dir(os.path.join(tmp, f"x{mode:o}"), mode)
        sock = os.path.join(d, "sigild.sock")
        refused(["--socket", sock, "--state-dir", os.path.join(tmp, "st")],
                [d, f"belongs to uid {NOBODY}", "chown"])
        assert not os.path.exists(sock), "sigild bound in the other uid's directory"
        assert not os.path.exists(os.path.join(d, "ssh-agent.sock"))


def test_socket_dir_symlink(tmp):
    d = nobody_dir(os.path.join(tmp, "target"), 0o777)
    link = os.path.join(tmp, "link")
    os.symlink(d, link)
    refused(["--socket", os.path.join(link, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
            [link, "symbolic link"])
    assert os.listdir(d) == []
    # also a symlink to a directory of ours
    mine = os.path.join(tmp, "mine")
    os.mkdir(mine, 0o700)
    link2 = os.path.join(tmp, "link2")
    os.symlink(mine, link2)
    refused(["--socket", os.path.join(link2, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
            [link2, "symbolic link"])
    assert os.listdir(mine) == []


def test_socket_dir_open_to_others(tmp):
    d = os.path.join(tmp, "open")
    os.mkdir(d)
    os.chmod(d, 0o777)
    refused(["--socket", os.path.join(d, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
            [d, "mode 0777", "chmod"])
    assert os.listdir(d) == []


def test_socket_dir_inside_another_uids_dir(tmp):
    """a directory of ours inside one another uid owns (or can write without
    the sticky bit): its owner could rename ours away"""
    for mode in (0o755, 0o1777):
        top = nobody_dir(os.path.join(tmp, f"top{mode:o}"), mode)
        d = os.path.join(top, "run")
        os.mkdir(d, 0o700)
        refused(["--socket", os.path.join(d, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
                [d, "is inside " + top, "rename"])
        assert os.listdir(d) == []
    # root's, writable by others without the sticky bit
    top = os.path.join(tmp, "open-top")
    os.mkdir(top)
    os.chmod(top, 0o777)
    refused(["--socket", os.path.join(top, "run", "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
            ["is inside " + top, "no sticky bit"])
    assert os.listdir(top) == [], "sigild made a directory in it"
    # a sticky directory of root's (like /tmp) is fine
    sticky = os.path.join(tmp, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    d = Daemon(os.path.join(sticky, "run", "s.sock"), os.path.join(tmp, "st"))
    d.stop()


def test_bind_without_proc(tmp):
    """without /proc the socket is bound from inside the checked directory"""
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is required"
    sock = os.path.join(tmp, "run", "s.sock")
    log = open(os.path.join(tmp, "noproc.log"), "wb")
    proc = subprocess.Popen([unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
                             'umount -l /proc && test ! -e /proc/self && exec "$@"', "sh",
                             SIGILD, "--foreground", "--workers", "1", "--socket", sock,
                             "--state-dir", os.path.join(tmp, "st")], stdout=log, stderr=log, env=clean_env())
    log.close()
    try:
        deadline = time.time() + 15
        while True:
            assert proc.poll() is None, open(os.path.join(tmp, "noproc.log")).read()
            try:
                c = sigiltest.Client(sock)
                break
            except OSError:
                assert time.time() < deadline, "sigild did not start"
                time.sleep(0.01)
        assert c.call("key.list")["keys"] == []
        c.close()
        st = os.stat(sock)
        assert stat.S_ISSOCK(st.st_mode) and st.st_mode & 0o777 == 0o600, oct(st.st_mode)
        assert os.path.exists(os.path.join(tmp, "run", "ssh-agent.sock"))
        assert not os.path.exists("s.sock") and not os.path.exists(os.path.join(tmp, "s.sock"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def squat(tmp, name):
    """a directory of ours (0755) with NOBODY's live listener at name in it"""
    d = os.path.join(tmp, "run")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o777)  # for the squatter to bind; closed again below
    recdir = nobody_dir(os.path.join(tmp, "rec"), 0o755)
    fake = Fake(os.path.join(d, name), recdir)
    os.chmod(d, 0o755)
    return d, fake


def test_live_listener_at_socket_path(tmp):
    d, fake = squat(tmp, "sigild.sock")
    try:
        refused(["--socket", fake.path, "--state-dir", os.path.join(tmp, "st")],
                [fake.path, "is listening"])
        assert os.path.exists(fake.path), "the live socket was unlinked"
        # the squatter keeps its socket; a client of ours refuses it too
        r = sigil(["-s", fake.path, "list"])
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert fake.received() == 0, "the squatter received bytes"
    finally:
        fake.stop()
    # a live listener of our own uid is not replaced either
    own = Fake(os.path.join(d, "own.sock"), tmp, uid=0)
    try:
        refused(["--socket", own.path, "--state-dir", os.path.join(tmp, "st")], [own.path, "is listening"])
        assert os.path.exists(own.path) and own.received() == 0
    finally:
        own.stop()


def test_agent_socket_squatted(tmp):
    d, fake = squat(tmp, "ssh-agent.sock")
    try:
        # the default agent path next to the main socket
        refused(["--socket", os.path.join(d, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
                [fake.path, "is listening"])
        assert not os.path.exists(os.path.join(d, "sigild.sock"))
        # and an explicit one
        refused(["--socket", os.path.join(d, "sigild.sock"), "--ssh-agent-socket", fake.path,
                 "--state-dir", os.path.join(tmp, "st")], [fake.path, "is listening"])
        assert fake.received() == 0, "the squatter received bytes"
        assert os.path.exists(fake.path)
    finally:
        fake.stop()
    # a stale socket owned by another uid is not replaced either
    os.chmod(d, 0o777)
    stale = os.path.join(d, "stale.sock")
    subprocess.run(as_nobody(["/usr/bin/python3", "-c",
                              f"import socket; socket.socket(socket.AF_UNIX).bind({stale!r})"]), check=True, timeout=20)
    os.chmod(d, 0o755)
    refused(["--socket", os.path.join(d, "sigild.sock"), "--ssh-agent-socket", stale,
             "--state-dir", os.path.join(tmp, "st")], [stale, f"belongs to uid {NOBODY}"])
    assert os.path.exists(stale)


def test_squatter_gets_nothing_from_ssh_add_after_refusal(tmp):
    """the real attack: sigild refused, the squatter's socket stays; ssh-add
    (which cannot check) would talk to it - so sigild must not have started
    as if all were well: it exits non-zero (checked above) and here the
    squatter, in a directory of another uid, is refused before sigild binds
    anything next to it"""
    d = nobody_dir(os.path.join(tmp, "x"), 0o777)
    fake = Fake(os.path.join(d, "ssh-agent.sock"), d)
    try:
        refused(["--socket", os.path.join(d, "sigild.sock"), "--state-dir", os.path.join(tmp, "st")],
                [d, f"belongs to uid {NOBODY}"])
        assert not os.path.exists(os.path.join(d, "sigild.sock"))
        assert fake.received() == 0
    finally:
        fake.stop()


# ---- files ------------------------------------------------------------------------

def bad_files(tmp, content=b"k" * 32):
    """(name, path, expected message parts) of files sigild must refuse"""
    out = []
    p = os.path.join(tmp, "nobody.key")
    with open(p, "wb") as f:
        f.write(content)
    os.chown(p, NOBODY, NOBODY)
    os.chmod(p, 0o600)
    out.append(("owned by another uid", p, [p, f"belongs to uid {NOBODY}"]))
    p = os.path.join(tmp, "loose.key")
    with open(p, "wb") as f:
        f.write(content)
    os.chmod(p, 0o666)
    out.append(("mode 0666", p, [p, "mode 0666", "chmod"]))
    good = os.path.join(tmp, "good.key")
    with open(good, "wb") as f:
        f.write(content)
    os.chmod(good, 0o600)
    p = os.path.join(tmp, "link.key")
    os.symlink(good, p)
    out.append(("symlink", p, [p, "symbolic link"]))
    p = os.path.join(tmp, "fifo.key")
    os.mkfifo(p, 0o600)
    out.append(("fifo", p, [p, "not a regular file"]))
    out.append(("device", "/dev/zero", ["/dev/zero", "not a regular file"]))
    return out


def test_master_key_file_refused_at_start(tmp):
    for name, path, expect in bad_files(tmp):
        t0 = time.time()
        refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st-" + name[:4]),
                 "--master-key-file", path], expect)
        assert time.time() - t0 < 20, name


def test_credential_checked_at_start(tmp):
    cred = os.path.join(tmp, "creds")
    os.mkdir(cred, 0o700)
    mk = os.path.join(cred, "master-key")
    with open(mk, "wb") as f:
        f.write(os.urandom(32))
    env = clean_env(CREDENTIALS_DIRECTORY=cred)
    args = ["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st")]
    os.chmod(mk, 0o460)
    refused(args, [mk, "mode 0460", "group or others can write"], env=env)
    os.chmod(mk, 0o400)
    os.chown(mk, NOBODY, NOBODY)
    refused(args, [mk, f"belongs to uid {NOBODY}"], env=env)
    # systemd's own: root's, read access by an ACL whose mask shows as 0440
    os.chown(mk, 0, 0)
    os.chmod(mk, 0o440)
    d = Daemon(os.path.join(tmp, "run", "s.sock"), os.path.join(tmp, "st"), env=env)
    # (the start-up line reaches the log at the loop's first flush, which
    # may come after a client could already connect)
    deadline = time.time() + 10
    while "master key: systemd credential" not in d.logtext() and time.time() < deadline:
        time.sleep(0.05)
    assert "master key: systemd credential" in d.logtext(), d.logtext()
    d.stop()


def test_audit_file_refused_at_start(tmp):
    for name, path, expect in bad_files(tmp, b"audit: old line\n"):
        if name == "device":
            continue
        refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st"),
                 "--audit-file", path], expect)
    # the file was not touched
    with open(os.path.join(tmp, "nobody.key"), "rb") as f:
        assert f.read() == b"audit: old line\n"


def test_config_file_refused_at_start(tmp):
    p = os.path.join(tmp, "sigil.conf")
    with open(p, "w") as f:
        f.write("workers = 1\n")
    os.chmod(p, 0o666)
    refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st"), "--config", p],
            [p, "mode 0666"])
    os.chmod(p, 0o644)
    os.chown(p, NOBODY, NOBODY)
    refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st"), "--config", p],
            [p, f"belongs to uid {NOBODY}"])


def test_config_file_symlink_refused(tmp):
    p = os.path.join(tmp, "real.conf")
    with open(p, "w") as f:
        f.write("workers = 1\n")
    link = os.path.join(tmp, "link.conf")
    os.symlink(p, link)
    refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st"), "--config", link],
            [link, "symbolic link"])
    fifo = os.path.join(tmp, "fifo.conf")
    os.mkfifo(fifo, 0o600)
    refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", os.path.join(tmp, "st"), "--config", fifo],
            [fifo, "not a regular file"])


def test_state_dir_symlink_refused(tmp):
    real = os.path.join(tmp, "realstate")
    os.mkdir(real, 0o700)
    link = os.path.join(tmp, "statelink")
    os.symlink(real, link)
    refused(["--socket", os.path.join(tmp, "run", "s.sock"), "--state-dir", link], [link, "symbolic link"])


def test_rekey_new_master_key_file_refused(tmp):
    d = Daemon(os.path.join(tmp, "run", "s.sock"), os.path.join(tmp, "st"))
    try:
        c = sigiltest.Client(d.sock)
        c.call("key.generate", {"type": "ed25519", "label": "k1"})
        msgs = set()
        bad = bad_files(tmp)
        hidden = os.path.join(tmp, "hidden")
        os.mkdir(hidden, 0o700)
        with open(os.path.join(hidden, "k"), "wb") as f:
            f.write(b"k" * 32)
        os.chmod(os.path.join(hidden, "k"), 0o644)
        for _, path, _ in bad + [("missing", os.path.join(hidden, "none"), None),
                                  ("hidden loose", os.path.join(hidden, "k"), None)]:
            t0 = time.time()
            msgs.add(c.expect_error("denied", "rekey", {"master_key_file": path}).replace(path, "PATH"))
            assert time.time() - t0 < 10
        # one message whatever is wrong: no existence or mode oracle
        assert len(msgs) == 1, msgs
        # a path with terminal sequences and a newline: escaped in the log and audit lines
        evil = os.path.join(hidden, "k\x1b]0;pwned\x07\nfake: line\x9b2J")
        c.expect_error("denied", "rekey", {"master_key_file": evil})
        # the command: denied (exit 4), and a FIFO does not hang it
        r = sigil(["-s", d.sock, "rekey", "--new-master-key-file", os.path.join(tmp, "fifo.key")])
        assert r.returncode == 4 and b"denied" in r.stderr, (r.returncode, r.stderr)
        # sigild still answers, with its key, and a good file works
        assert [k["label"] for k in c.call("key.list")["keys"]] == ["k1"]
        r = sigil(["-s", d.sock, "rekey", "--new-master-key-file", os.path.join(tmp, "good.key")])
        assert r.returncode == 0, r.stderr
        c.close()
        log = d.logtext()
        assert "belongs to uid 65534" in log and "symbolic link" in log, log
        c2 = sigiltest.Client(d.sock)
        lines = c2.call("audit", {})["lines"]
        c2.close()
        with open(d.log, "rb") as f:
            raw = f.read()
        assert b"\x1b" not in raw and b"\x07" not in raw and b"\xc2\x9b" not in raw, raw
        evil_lines = [ln for ln in raw.split(b"\n") if b"pwned" in ln]
        assert len(evil_lines) == 2 and not any(ln.startswith(b"fake: line") for ln in raw.split(b"\n")), raw
        assert any("pwned" in ln and "\x1b" not in ln and "\n" not in ln for ln in lines), lines
    finally:
        d.stop()


# ---- logs -------------------------------------------------------------------------

def test_peer_strings_escaped_in_log(tmp):
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "run", "s.sock")
    conf = os.path.join(tmp, "sigil.conf")
    with open(conf, "w") as f:
        f.write(f"socket_group = {NOBODY}\n")
    os.chmod(conf, 0o644)
    d = Daemon(sock, os.path.join(tmp, "st"), ["--config", conf])
    try:
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir, 0o755)
        evil = os.path.join(bindir, "py\x1b]0;pwned\x07\nfake: line\x1b[2J")
        shutil.copy("/usr/bin/python3", evil)
        os.chmod(evil, 0o755)
        r = subprocess.run(as_nobody([evil, "-c", f"import socket; s = socket.socket(socket.AF_UNIX); "
                                      f"s.connect({sock!r}); s.recv(4096)"]), timeout=20,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert r.returncode == 0, r.stderr
        deadline = time.time() + 10
        while "refused connection" not in d.logtext():
            assert time.time() < deadline, d.logtext()
            time.sleep(0.05)
    finally:
        d.stop()
    with open(d.log, "rb") as f:
        raw = f.read()
    assert b"\x1b" not in raw and b"\x07" not in raw, raw
    lines = [ln for ln in raw.split(b"\n") if b"refused connection" in ln]
    assert len(lines) == 1 and b"fake: line" in lines[0], lines
    assert b"\\x1b" in lines[0] or b"\\033" in lines[0] or b"\\e" in lines[0], lines


# ---- clients check the server -------------------------------------------------------

def test_client_refuses_server_of_another_uid(tmp):
    os.chmod(tmp, 0o755)
    d = nobody_dir(os.path.join(tmp, "fake"), 0o755)
    fake = Fake(os.path.join(d, "sigild.sock"), d)
    try:
        r = sigil(["-s", fake.path, "list"])
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert b"uid 65534" in r.stderr and b"SIGIL_SERVER_UID" in r.stderr, r.stderr
        seed = os.path.join(tmp, "seed")
        with open(seed, "wb") as f:
            f.write(os.urandom(32))
        r = sigil(["-s", fake.path, "import", "--type", "ed25519", "release", seed])
        assert r.returncode in (2, 3), (r.returncode, r.stderr)
        r = sigil(["list"], env=clean_env(SIGIL_SOCK=fake.path))
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert fake.received() == 0, "the client sent bytes to another uid's server"
        # named: the client proceeds (and sends its request)
        r = sigil(["-s", fake.path, "--timeout", "1000", "list"], env=clean_env(SIGIL_SERVER_UID=str(NOBODY)))
        deadline = time.time() + 10
        while fake.received() == 0:
            assert time.time() < deadline, "nothing sent with SIGIL_SERVER_UID"
            time.sleep(0.02)
        n = fake.received()
        r = sigil(["-s", fake.path, "--timeout", "1000", "--server-uid", str(NOBODY), "list"])
        deadline = time.time() + 10
        while fake.received() == n:
            assert time.time() < deadline, "nothing sent with --server-uid"
            time.sleep(0.02)
        # another uid named: still refused
        n = fake.received()
        r = sigil(["-s", fake.path, "list"], env=clean_env(SIGIL_SERVER_UID="12345"))
        assert r.returncode == 3 and fake.received() == n
    finally:
        fake.stop()


def test_client_accepts_own_and_root_server(tmp):
    d = Daemon(os.path.join(tmp, "run", "s.sock"), os.path.join(tmp, "st"))
    try:
        r = sigil(["-s", d.sock, "list"])
        assert r.returncode == 0, r.stderr
    finally:
        d.stop()


# ---- socket activation of both sockets ------------------------------------------------

def test_socket_activation_by_name(tmp):
    run = os.path.join(tmp, "act")
    os.mkdir(run, 0o700)
    p1, p2 = os.path.join(run, "main.sock"), os.path.join(run, "agent.sock")
    log = open(os.path.join(tmp, "act.log"), "wb")
    proc = subprocess.Popen(["systemd-socket-activate", "-l", p1, "-l", p2, "--fdname=sigild:ssh-agent",
                             SIGILD, "--foreground", "--workers", "1", "--state-dir", os.path.join(tmp, "st"),
                             "--socket", os.path.join(tmp, "unused", "s.sock")],
                            stdout=log, stderr=log, env=clean_env())
    log.close()
    try:
        deadline = time.time() + 10
        while not (os.path.exists(p1) and os.path.exists(p2)):
            assert time.time() < deadline and proc.poll() is None, "systemd-socket-activate did not listen"
            time.sleep(0.01)
        r = sigil(["-s", p1, "keygen", "act-key"])
        assert r.returncode == 0, r.stderr
        r = sigil(["-s", p1, "list"])
        assert r.returncode == 0 and b"act-key" in r.stdout, r
        r = subprocess.run(["ssh-add", "-L"], env=clean_env(SSH_AUTH_SOCK=p2), timeout=20,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert r.returncode == 0 and r.stdout.startswith(b"ssh-ed25519 "), r
        assert not os.path.exists(os.path.join(tmp, "unused")), "sigild bound a socket of its own"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def main():
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    tests.sort(key=lambda f: f.__code__.co_firstlineno)
    print(f"1..{len(tests)}", flush=True)
    ok = True
    for n, t in enumerate(tests, 1):
        tmp = tempfile.mkdtemp(prefix="sigil-fs-")
        os.chmod(tmp, 0o755)  # uid 65534 reaches its directories inside
        try:
            ok &= sigiltest.tap_run(n, t, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
