# SPDX-License-Identifier: MIT
"""agentproto.py - a small ssh-agent protocol client for sigil's Python tests.

An independent client (OpenSSH PROTOCOL.agent, draft-miller-ssh-agent) on
the standard library and pyca/cryptography, used by
tests/authority/test_authority.py to send the messages the real OpenSSH
tools would send, and the hostile ones they never send: framing,
REQUEST_IDENTITIES, SIGN_REQUEST, ADD_IDENTITY and ADD_ID_CONSTRAINED
(lifetime, confirm, restrict-destination-v00@openssh.com), REMOVE_IDENTITY,
REMOVE_ALL_IDENTITIES, LOCK, UNLOCK and the session-bind@openssh.com
extension. Run with /usr/bin/python3.
"""
import os
import socket
import struct

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

FAILURE = 5
SUCCESS = 6
REQUEST_IDENTITIES = 11
IDENTITIES_ANSWER = 12
SIGN_REQUEST = 13
SIGN_RESPONSE = 14
ADD_IDENTITY = 17
REMOVE_IDENTITY = 18
REMOVE_ALL_IDENTITIES = 19
LOCK = 22
UNLOCK = 23
ADD_ID_CONSTRAINED = 25
EXTENSION = 27
EXTENSION_RESPONSE = 29

CONSTRAIN_LIFETIME = 1
CONSTRAIN_CONFIRM = 2
CONSTRAIN_EXTENSION = 255


def u32(v):
    return struct.pack(">I", v)


def string(b):
    if isinstance(b, str):
        b = b.encode()
    return u32(len(b)) + b


def ed_blob(pk):
    """The OpenSSH public key blob of an Ed25519 key."""
    return string("ssh-ed25519") + string(pk)


def raw_pub(priv):
    return priv.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def raw_seed(priv):
    return priv.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                              serialization.NoEncryption())


def hop(user="", host="", keys=()):
    """One hop of a destination constraint: user, host name, reserved, then
    (key blob, is_ca) pairs, as OpenSSH's encode_dest_constraint_hop()."""
    b = string(user) + string(host) + string(b"")
    for pk in keys:
        b += string(ed_blob(pk)) + b"\x00"
    return string(b)


def dest_constraint(to_host, to_keys, to_user="", from_host="", from_keys=()):
    """restrict-destination-v00@openssh.com with one constraint (from hop,
    to hop, reserved). The default from hop is this machine (empty)."""
    one = hop("", from_host, from_keys) + hop(to_user, to_host, to_keys) + string(b"")
    return bytes([CONSTRAIN_EXTENSION]) + string("restrict-destination-v00@openssh.com") + string(string(one))


def userauth_request(sid, user, pk, hostkey=None):
    """The data ssh asks an agent to sign for publickey user authentication
    (RFC 4252 section 7; publickey-hostbound-v00@openssh.com with hostkey)."""
    meth = "publickey-hostbound-v00@openssh.com" if hostkey else "publickey"
    b = string(sid) + bytes([50]) + string(user) + string("ssh-connection") + string(meth) + b"\x01"
    b += string("ssh-ed25519") + string(ed_blob(pk))
    if hostkey:
        b += string(ed_blob(hostkey))
    return b


class Reader:
    def __init__(self, b):
        self.b = b
        self.o = 0

    def u8(self):
        v = self.b[self.o]
        self.o += 1
        return v

    def u32(self):
        v = struct.unpack(">I", self.b[self.o:self.o + 4])[0]
        self.o += 4
        return v

    def string(self):
        n = self.u32()
        v = self.b[self.o:self.o + n]
        assert len(v) == n, "truncated string"
        self.o += n
        return v


class Agent:
    """One connection to an ssh-agent socket (a path, or a connected socket)."""

    def __init__(self, path=None, sock=None, timeout=30):
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
        self.sock = sock

    def close(self):
        self.sock.close()

    def send(self, msg):
        self.sock.sendall(u32(len(msg)) + msg)

    def recv(self):
        hdr = self._read(4)
        (n,) = struct.unpack(">I", hdr)
        return self._read(n)

    def _read(self, n):
        b = b""
        while len(b) < n:
            d = self.sock.recv(n - len(b))
            if not d:
                raise EOFError("the agent closed the connection")
            b += d
        return b

    def call(self, msg):
        self.send(msg)
        return self.recv()

    def simple(self, msg):
        """A request answered by SUCCESS or FAILURE: True for SUCCESS."""
        r = self.call(msg)
        assert r in (bytes([SUCCESS]), bytes([FAILURE])), r
        return r[0] == SUCCESS

    # ---- requests

    def identities(self):
        """[(public key, comment)] of the Ed25519 keys listed (others skipped)."""
        r = self.call(bytes([REQUEST_IDENTITIES]))
        assert r[0] == IDENTITIES_ANSWER, r[:1]
        rd = Reader(r[1:])
        out = []
        for _ in range(rd.u32()):
            blob = rd.string()
            comment = rd.string().decode(errors="replace")
            br = Reader(blob)
            if br.string() == b"ssh-ed25519":
                out.append((br.string(), comment))
        return out

    @staticmethod
    def sign_msg(pk, data, flags=0):
        return bytes([SIGN_REQUEST]) + string(ed_blob(pk)) + string(data) + u32(flags)

    @staticmethod
    def parse_sign(r):
        """The 64-byte signature of a SIGN_RESPONSE, or None for FAILURE."""
        if r == bytes([FAILURE]):
            return None
        assert r[0] == SIGN_RESPONSE, r[:1]
        sr = Reader(Reader(r[1:]).string())
        assert sr.string() == b"ssh-ed25519"
        sig = sr.string()
        assert len(sig) == 64
        return sig

    def sign(self, pk, data, flags=0):
        return self.parse_sign(self.call(self.sign_msg(pk, data, flags)))

    @staticmethod
    def add_msg(seed, pk, comment="", lifetime=None, confirm=False, dest=None, sk=None):
        """ADD_IDENTITY, or ADD_ID_CONSTRAINED with constraints. sk: the
        64-byte private half sent (default seed || pk, as OpenSSH sends)."""
        body = string("ssh-ed25519") + string(pk) + string(sk if sk is not None else seed + pk) + string(comment)
        cons = b""
        if lifetime is not None:
            cons += bytes([CONSTRAIN_LIFETIME]) + u32(lifetime)
        if confirm:
            cons += bytes([CONSTRAIN_CONFIRM])
        if dest is not None:
            cons += dest
        return bytes([ADD_ID_CONSTRAINED if cons else ADD_IDENTITY]) + body + cons

    def add(self, seed, pk, comment="", **kw):
        return self.simple(self.add_msg(seed, pk, comment, **kw))

    def add_priv(self, priv, comment="", **kw):
        return self.add(raw_seed(priv), raw_pub(priv), comment, **kw)

    def remove(self, pk):
        return self.simple(bytes([REMOVE_IDENTITY]) + string(ed_blob(pk)))

    def remove_all(self):
        return self.simple(bytes([REMOVE_ALL_IDENTITIES]))

    def lock(self, passphrase):
        return self.simple(bytes([LOCK]) + string(passphrase))

    def unlock(self, passphrase):
        return self.simple(bytes([UNLOCK]) + string(passphrase))

    def session_bind(self, host_priv, sid=None, forwarding=False, bad_sig=False):
        """session-bind@openssh.com: the host key signs the session id.
        Returns (accepted, session id)."""
        sid = sid if sid is not None else os.urandom(32)
        sig = bytearray(host_priv.sign(sid))
        if bad_sig:
            sig[7] ^= 1
        msg = (bytes([EXTENSION]) + string("session-bind@openssh.com") + string(ed_blob(raw_pub(host_priv))) +
               string(sid) + string(string("ssh-ed25519") + string(bytes(sig))) + (b"\x01" if forwarding else b"\x00"))
        return self.simple(msg), sid


def new_key():
    """A fresh Ed25519 key: (private key object, seed, public key)."""
    priv = Ed25519PrivateKey.generate()
    return priv, raw_seed(priv), raw_pub(priv)
