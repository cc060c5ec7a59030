# SPDX-License-Identifier: MIT
"""sshdharness.py - a loopback sshd and a sigild with its agent socket, for
the tests that drive OpenSSH's own tools against sigil.

Sshd: /usr/sbin/sshd -D -e -f CONFIG on 127.0.0.1 and a free port, with
temporary host keys and whatever AuthorizedKeysFile / TrustedUserCAKeys /
HostKeyAgent lines a test gives; it runs as root (as in CI) so that it can
log in root. Sigild: the real sigild (path in $SIGILD) on a temporary main
socket, agent socket and state directory. Run with /usr/bin/python3; a
missing tool is a failure, never a skip.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from sigiltest import clean_env, tap_run  # noqa: E402,F401

SSHD = "/usr/sbin/sshd"
TOOLS = ("ssh", "ssh-keygen", "ssh-add", "ssh-agent")


def require_tools():
    missing = [t for t in TOOLS if not shutil.which(t)]
    if not os.access(SSHD, os.X_OK):
        missing.append(SSHD)
    if missing:
        raise AssertionError("missing tools (install openssh-client, openssh-server): " + ", ".join(missing))
    if os.geteuid() != 0:
        raise AssertionError("the sshd tests run as root (as in CI): sshd must switch to the logged-in user")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, check=True, env=None, cwd=None, timeout=60, input=None):
    """Runs a shell command; returns (rc, stdout+stderr text)."""
    p = subprocess.run(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env or clean_env(),
                       cwd=cwd, timeout=timeout, input=input)
    out = p.stdout.decode(errors="replace")
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd!r} exited {p.returncode}:\n{out}")
    return p.returncode, out


def wait_for(pred, what, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class Sigild:
    """The real sigild with its agent socket; self.sigil(args) runs the sigil
    command against it."""

    def __init__(self, workdir, extra=(), config=""):
        self.dir = workdir
        self.sock = os.path.join(workdir, "run", "sigild.sock")
        self.agent = os.path.join(workdir, "run", "ssh-agent.sock")
        self.state = os.path.join(workdir, "state")
        self.logpath = os.path.join(workdir, "sigild.log")
        self.conf = os.path.join(workdir, "sigil.conf")
        with open(self.conf, "w") as f:
            f.write(config)
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen(
            [os.environ["SIGILD"], "--socket", self.sock, "--ssh-agent-socket", self.agent, "--state-dir",
             self.state, "--config", self.conf, "--workers", "2", "--foreground", *extra],
            stdout=self.log, stderr=self.log, env=clean_env())

        def up():
            if self.proc.poll() is not None:
                raise AssertionError(f"sigild exited with {self.proc.returncode}:\n{self.logtext()}")
            return os.path.exists(self.agent) and os.path.exists(self.sock)
        wait_for(up, "sigild's sockets")

    def sigil(self, args, check=True):
        return run(f"{os.environ['SIGIL']} -s {self.sock} {args}", check=check, cwd=self.dir)

    def env(self, **extra):
        """The environment of an OpenSSH tool using sigil as its agent."""
        return clean_env(drop=("SSH_AGENT_PID",), SSH_AUTH_SOCK=self.agent, **extra)

    def logtext(self):
        with open(self.logpath, "r", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


class Sshd:
    """sshd -D -e on 127.0.0.1:port with the given config lines (HostKey
    lines default to a fresh Ed25519 host key in workdir)."""

    def __init__(self, workdir, lines, hostkeys=None, name="sshd"):
        self.dir = workdir
        self.port = free_port()
        self.conf = os.path.join(workdir, f"{name}_config")
        self.logpath = os.path.join(workdir, f"{name}.log")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        if hostkeys is None:
            hk = os.path.join(workdir, f"{name}_hostkey")
            if not os.path.exists(hk):
                run(f"ssh-keygen -q -t ed25519 -N '' -f {hk}")
            hostkeys = [f"HostKey {hk}"]
            self.hostkey = hk
        with open(self.conf, "w") as f:
            f.write(f"Port {self.port}\nListenAddress 127.0.0.1\nPidFile none\nUsePAM no\n"
                    "PermitRootLogin yes\nStrictModes no\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nAllowUsers root\n"
                    "LogLevel VERBOSE\n")
            for line in list(hostkeys) + list(lines):
                f.write(line + "\n")
        run(f"{SSHD} -t -f {self.conf}")
        self.log = open(self.logpath, "ab")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", self.conf], stdout=self.log, stderr=self.log,
                                     env=clean_env(drop=("SSH_AUTH_SOCK",)))

        def listening():
            if self.proc.poll() is not None:
                raise AssertionError(f"sshd exited with {self.proc.returncode}:\n{self.logtext()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, f"sshd on 127.0.0.1:{self.port}")

    def ssh_cmd(self, opts="", known_hosts=None):
        """ssh to root@127.0.0.1 with no configuration file; host key checks
        off unless known_hosts is given."""
        hk = (f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={known_hosts}" if known_hosts else
              "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null")
        return (f"ssh -F /dev/null -p {self.port} {hk} -o GlobalKnownHostsFile=/dev/null -o BatchMode=yes "
                f"-o PasswordAuthentication=no -o ConnectTimeout=20 {opts} root@127.0.0.1")

    def login(self, opts="", command="echo logged-in-as-$(id -un)", env=None, known_hosts=None):
        """(ok, output) of one ssh login running command."""
        rc, out = run(f"{self.ssh_cmd(opts, known_hosts)} '{command}'", check=False,
                      env=env or clean_env(drop=("SSH_AUTH_SOCK",)), cwd=self.dir)
        return rc == 0 and (command != "echo logged-in-as-$(id -un)" or "logged-in-as-root" in out), out

    def logtext(self):
        with open(self.logpath, "r", errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def workdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o700)
    return d


def tap_main(tests, *args):
    """TAP plan and results of tests (each called with *args); the exit
    status is 1 if one failed."""
    print(f"1..{len(tests)}", flush=True)
    ok = True
    for n, t in enumerate(tests, 1):
        ok &= tap_run(n, t, *args)
    return 0 if ok else 1


# ---- a raw ssh-agent client (draft-miller-ssh-agent framing) ----

def sstr(b):
    if isinstance(b, str):
        b = b.encode()
    return len(b).to_bytes(4, "big") + b


def read_str(buf, off):
    n = int.from_bytes(buf[off:off + 4], "big")
    return buf[off + 4:off + 4 + n], off + 4 + n


class AgentClient:
    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)

    def request(self, msg):
        """One request; the answer's bytes (type first)."""
        self.sock.sendall(len(msg).to_bytes(4, "big") + msg)
        hdr = self._read(4)
        return self._read(int.from_bytes(hdr, "big"))

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError("the agent closed the connection")
            data += chunk
        return data

    def identities(self):
        """[(blob, comment)] of REQUEST_IDENTITIES."""
        ans = self.request(bytes([11]))
        assert ans[0] == 12, ans[:1]
        n = int.from_bytes(ans[1:5], "big")
        off, out = 5, []
        for _ in range(n):
            blob, off = read_str(ans, off)
            comment, off = read_str(ans, off)
            out.append((blob, comment.decode(errors="replace")))
        return out

    def close(self):
        self.sock.close()


def pubkey_blob(path):
    """The key blob of an OpenSSH public key or certificate file."""
    import base64
    with open(path) as f:
        return base64.b64decode(f.read().split()[1])
