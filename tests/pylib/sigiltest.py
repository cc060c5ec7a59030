# SPDX-License-Identifier: MIT
"""sigiltest.py - the msgpack-rpc client shared by sigil's Python tests.

An independent client for sigild on Python's msgpack package (not sigil's
proto/ code), used by tests/daemon/test_python_client.py and
tests/atrest/test_atrest.py, which add it to sys.path. Run with
/usr/bin/python3 (Debian's python3-msgpack and python3-cryptography).
"""
import os
import socket
import traceback

import msgpack
from cryptography.hazmat.primitives import serialization

RAW = serialization.Encoding.Raw
RAWPUB = serialization.PublicFormat.Raw
RAWPRIV = serialization.PrivateFormat.Raw
NOENC = serialization.NoEncryption()

# systemd's variables, which would change what sigild does at start
SYSTEMD_VARS = ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
                "WATCHDOG_USEC", "WATCHDOG_PID", "INVOCATION_ID")


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Client:
    """One connection to sigild. strict: every response must be a 4-element
    list of type 1 and every error must carry code and message."""

    strict = True

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
                if self.strict:
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
            if self.strict:
                assert set(err) >= {"code", "message"}, err
            raise RpcError(err["code"], err["message"])
        return result

    def expect_error(self, code, method, params=None):
        try:
            self.call(method, params)
        except RpcError as e:
            assert e.code == code, (e.code, code, e.message)
            return e.message
        raise AssertionError(f"{method} succeeded; expected {code}")


def clean_env(drop=(), **extra):
    """The environment without systemd's variables (and those named in drop),
    plus extra."""
    env = {k: v for k, v in os.environ.items() if k not in SYSTEMD_VARS and k not in drop}
    env.update(extra)
    return env


def tap_in_tmp(tests, prefix, log_lines=30, mode=None):
    """Runs each of @tests as TAP test t(tmp) in a fresh temporary
    directory (chmod'ed to @mode if given), removed afterwards; a failed
    test is followed by the last @log_lines lines of tmp/sigild.log.
    Prints the plan first. Returns the exit status (1 if any failed)."""
    import shutil
    import tempfile

    print(f"1..{len(tests)}", flush=True)
    failed = 0
    for n, t in enumerate(tests, 1):
        tmp = tempfile.mkdtemp(prefix=prefix)
        if mode is not None:
            os.chmod(tmp, mode)
        try:
            if not tap_run(n, t, tmp):
                failed += 1
                log = os.path.join(tmp, "sigild.log")
                if os.path.exists(log):
                    for line in open(log, errors="replace").read().splitlines()[-log_lines:]:
                        print("# log: " + line, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def tap_run(n, t, *args):
    """Runs t(*args) as TAP test n: prints "ok", or "not ok" and the
    traceback as comments. Returns whether it passed."""
    try:
        t(*args)
        print(f"ok {n} - {t.__name__}", flush=True)
        return True
    except Exception:
        print(f"not ok {n} - {t.__name__}", flush=True)
        for line in traceback.format_exc().splitlines():
            print("# " + line, flush=True)
        return False
