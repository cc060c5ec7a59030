#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test_agent_upstream_faults.py - an upstream agent that misbehaves.

A fake upstream agent written here (a Unix socket server in this process)
answers sigild's relayed requests badly: a frame length over the
protocol's limit, a frame cut off by a close, an answer nobody asked for,
an identities answer that claims more keys than it carries, silence. For
each, a listing through sigil's agent socket still answers, with sigil's
key first and a key count that matches the entries; sigil's key still
signs; sigild stays up. An upstream that is sigild's own agent socket is
refused at start. Needs openssh-client (ssh-keygen, ssh-add).
"""
import os
import shutil
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sshdharness as h  # noqa: E402

UP_BLOB = h.sstr("ssh-ed25519") + h.sstr(bytes(range(32)))


def ids_answer(entries, claimed=None):
    body = bytes([12]) + struct.pack(">I", len(entries) if claimed is None else claimed)
    for blob, comment in entries:
        body += h.sstr(blob) + h.sstr(comment)
    return struct.pack(">I", len(body)) + body


class FakeUpstream:
    def __init__(self, path):
        self.mode = "good"
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(16)
        self.conns = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                s, _ = self.srv.accept()
            except OSError:
                return
            self.conns.append(s)
            threading.Thread(target=self.serve, args=(s,), daemon=True).start()

    def serve(self, s):
        buf = b""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                    n = struct.unpack(">I", buf[:4])[0]
                    msg, buf = buf[4:4 + n], buf[4 + n:]
                    if self.answer(s, msg) is False:
                        return
        except OSError:
            return
        finally:
            s.close()

    def answer(self, s, msg):
        good = ids_answer([(UP_BLOB, b"upstream-key")]) if msg[0] == 11 else b"\x00\x00\x00\x01\x05"
        m = self.mode
        if m == "good":
            s.sendall(good)
        elif m == "huge-length":
            s.sendall(b"\xff\xff\xff\xff" + b"x" * 100)
        elif m == "cut":
            s.sendall(good[:len(good) // 2])
            s.shutdown(socket.SHUT_RDWR)
            return False
        elif m == "extra":
            s.sendall(good + good)
        elif m == "overclaim":
            s.sendall(ids_answer([(UP_BLOB, b"upstream-key")], claimed=5) if msg[0] == 11 else good)
        elif m == "zero-length":
            s.sendall(b"\x00\x00\x00\x00")
        elif m == "silent":
            pass
        return True

    def close(self):
        self.srv.close()
        for s in self.conns:
            try:
                s.close()
            except OSError:
                pass


class Ctx:
    pass


def setup():
    for t in ("ssh-keygen", "ssh-add"):
        if not shutil.which(t):
            raise AssertionError(f"{t} is missing: install openssh-client")
    c = Ctx()
    c.dir = h.workdir("sigil-upfaults-")
    c.up = FakeUpstream(f"{c.dir}/up.sock")
    c.sigild = h.Sigild(c.dir, extra=("--ssh-agent-upstream", f"{c.dir}/up.sock"))
    h.run(f"ssh-keygen -q -t ed25519 -N '' -C mine -f {c.dir}/mine && ssh-add {c.dir}/mine", env=c.sigild.env())
    c.mine = h.pubkey_blob(f"{c.dir}/mine.pub")
    return c


def check_sigil_alone_or_merged(c, merged):
    a = h.AgentClient(c.sigild.agent)
    ids = a.identities()  # parses every entry the count claims
    assert ids[0] == (c.mine, "mine"), ids
    assert ids[1:] == ([(UP_BLOB, "upstream-key")] if merged else []), ids
    ans = a.request(bytes([13]) + h.sstr(c.mine) + h.sstr(b"data") + struct.pack(">I", 0))
    assert ans[0] == 14, ans
    a.close()
    assert c.sigild.proc.poll() is None


def test_good(c):
    c.up.mode = "good"
    check_sigil_alone_or_merged(c, True)


def test_huge_length(c):
    c.up.mode = "huge-length"
    check_sigil_alone_or_merged(c, False)


def test_cut_frame(c):
    c.up.mode = "cut"
    check_sigil_alone_or_merged(c, False)


def test_zero_length(c):
    c.up.mode = "zero-length"
    check_sigil_alone_or_merged(c, False)


def test_extra_answer(c):
    # the first answer is the listing's; the second, unasked, drops the
    # upstream connection; the next listing opens a new one
    c.up.mode = "extra"
    check_sigil_alone_or_merged(c, True)
    a = h.AgentClient(c.sigild.agent)
    assert len(a.identities()) == 2
    h.wait_for(lambda: len(a.identities()) == 2, "a listing after the extra answer")
    a.close()


def test_overclaimed_count(c):
    # the count sigild sends is the number of entries it sends
    c.up.mode = "overclaim"
    check_sigil_alone_or_merged(c, True)


def test_relayed_sign_refused(c):
    c.up.mode = "good"
    a = h.AgentClient(c.sigild.agent)
    ans = a.request(bytes([13]) + h.sstr(UP_BLOB) + h.sstr(b"data") + struct.pack(">I", 0))
    assert ans == bytes([5]), ans
    a.close()


def test_silent(c):
    # last: a timeout keeps the upstream out of new connections for 30 s
    c.up.mode = "silent"
    check_sigil_alone_or_merged(c, False)
    check_sigil_alone_or_merged(c, False)
    assert "did not answer identities" in c.sigild.logtext()


def test_upstream_is_itself(c):
    # --ssh-agent-upstream naming sigild's own agent socket: refused at
    # start (it would relay to itself, each connection opening another)
    d = f"{c.dir}/self"
    os.makedirs(d)
    s = h.Sigild(d, extra=("--ssh-agent-upstream", f"{d}/run/ssh-agent.sock"))
    try:
        h.run(f"ssh-add {c.dir}/mine", env=s.env())
        a = h.AgentClient(s.agent)
        assert a.identities() == [(c.mine, "mine")]
        a.close()
        assert "is this agent socket" in s.logtext(), s.logtext()
    finally:
        s.stop()


def main():
    c = setup()
    try:
        return h.tap_main([test_good, test_huge_length, test_cut_frame, test_zero_length, test_extra_answer,
                           test_overclaimed_count, test_relayed_sign_refused, test_silent, test_upstream_is_itself], c)
    finally:
        c.sigild.stop()
        c.up.close()
        shutil.rmtree(c.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
