#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# make-seeds.py - write the seed corpora of tests/fuzz/corpus/<target>/
# (their output is committed; run again only to change the seeds).
# Requires /usr/bin/python3 with python3-msgpack and python3-cryptography,
# and ssh-keygen, minisign, signify-openbsd for the signature files.
import hashlib
import os
import struct
import subprocess
import sys
import tempfile

import msgpack
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519
from cryptography.hazmat.primitives import serialization

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, 'corpus')


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def req(msgid, method, params=None):
    return msgpack.packb([0, msgid, method, [params if params is not None else {}]], use_bin_type=True)


def raw(sk):
    return sk.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                            serialization.NoEncryption())


def pub(k):
    return k.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


# The rpc target's store holds "ed" (seed 0x11 * 32) and "x" (0x22 * 32).
sk = ed25519.Ed25519PrivateKey.from_private_bytes(b'\x11' * 32)
pk = pub(sk.public_key())
msg = b'sigil fuzz seed'
sig = sk.sign(msg)
peer = pub(x25519.X25519PrivateKey.from_private_bytes(b'\x33' * 32).public_key())

streams = {
    'hello': req(1, 'hello'),
    'status': req(2, 'status'),
    'key-list': req(3, 'key.list'),
    'key-public': req(4, 'key.public', {'label': 'ed'}),
    'sign': req(5, 'sign', {'key': 'ed', 'message': msg}),
    'sign-ctx': req(6, 'sign', {'key': 'ed', 'message': msg, 'mode': 'ctx', 'context': b'foo'}),
    'sign-ph-prehashed': req(7, 'sign', {'key': 'ed', 'message': hashlib.sha512(msg).digest(),
                                         'mode': 'ph', 'prehashed': True}),
    'verify': req(8, 'verify', {'public_key': pk, 'message': msg, 'signature': sig}),
    'verify-zip215': req(9, 'verify', {'public_key': pk, 'message': msg, 'signature': sig,
                                       'policy': 'zip215'}),
    'verify-batch': req(10, 'verify_batch', {'items': [{'public_key': pk, 'message': msg, 'signature': sig}] * 3}),
    'dh': req(11, 'dh', {'key': 'x', 'peer': peer}),
    'dh-small-order': req(12, 'dh', {'key': 'x', 'peer': b'\x00' * 32}),
    'generate-delete': req(13, 'key.generate', {'type': 'ed25519', 'label': 'new'}) +
                       req(14, 'sign', {'key': 'new', 'message': b'm'}) +
                       req(15, 'key.delete', {'label': 'new'}),
    'import': req(16, 'key.import', {'type': 'x25519', 'label': 'imp', 'seed': b'\x44' * 32,
                                     'exportable': True}),
    'lock-sign-unlock': req(17, 'lock', {}) + req(18, 'sign', {'key': 'ed', 'message': msg}) +
                        req(19, 'unlock', {'passphrase': 'pw'}),
    'wrong-type': req(20, 'sign', {'key': 'x', 'message': msg}),
    'unknown-method': req(21, 'frobnicate'),
    'bad-params': req(22, 'sign', {'key': 7, 'message': 'not bin'}),
    'not-msgpack': req(23, 'hello') + b'\xc1',
    'too-large': b'\x94\x00\x18\x63\xc6\x40\x00\x00\x00',  # [0, 99, bin32 of 1 GiB...
    'pipelined': b''.join(req(100 + i, 'sign', {'key': 'ed', 'message': bytes([i]) * i}) for i in range(8)),
    'half-frame': req(30, 'hello')[:-1],
}
for name, data in streams.items():
    put('rpc', name, data)
    put('proto-decode', name, b'\x00' + data)
    put('proto-decode', name + '-split', b'\x01' + data)

# ssh-agent messages (draft-miller-ssh-agent): uint32 length, type, body
def sshstr(b):
    return struct.pack('>I', len(b)) + b


def amsg(t, body=b''):
    return struct.pack('>I', 1 + len(body)) + bytes([t]) + body


blob = sshstr(b'ssh-ed25519') + sshstr(pk)
add_sk = ed25519.Ed25519PrivateKey.from_private_bytes(b'\x66' * 32)
add_pk = pub(add_sk.public_key())
add_body = sshstr(b'ssh-ed25519') + sshstr(add_pk) + sshstr(b'\x66' * 32 + add_pk) + sshstr(b'fuzz@example')
agent = {
    'identities': amsg(11),
    'sign': amsg(13, sshstr(blob) + sshstr(b'data to sign') + struct.pack('>I', 0)),
    'sign-unknown-key': amsg(13, sshstr(sshstr(b'ssh-ed25519') + sshstr(bytes(32))) + sshstr(b'x') + struct.pack('>I', 0)),
    'add-sign-remove': amsg(17, add_body) + amsg(11) +
                       amsg(13, sshstr(sshstr(b'ssh-ed25519') + sshstr(add_pk)) + sshstr(b'm') + struct.pack('>I', 0)) +
                       amsg(18, sshstr(sshstr(b'ssh-ed25519') + sshstr(add_pk))),
    'add-constrained': amsg(25, add_body + bytes([1]) + struct.pack('>I', 60)),
    'lock-unlock': amsg(22, sshstr(b'pw')) + amsg(11) + amsg(23, sshstr(b'pw')),
    'extension-query': amsg(27, sshstr(b'query')),
    'session-bind': amsg(27, sshstr(b'session-bind@openssh.com') + sshstr(blob) + sshstr(b'\x01' * 32) +
                         sshstr(b'\x02' * 64) + b'\x00'),
    'remove-all': amsg(19),
    'unknown-type': amsg(200, b'abc'),
    'too-long': struct.pack('>I', 1 << 20) + b'\x0b',
    'truncated': amsg(13, sshstr(blob))[:-3],
}


# an ssh-ed25519-cert-v01@openssh.com certificate of add_pk by a CA key
# (PROTOCOL.certkeys), added with its key as ssh-add sends it, listed,
# used, removed
def ed_cert(subject_pk, ca_sk):
    body = (sshstr(b'ssh-ed25519-cert-v01@openssh.com') + sshstr(b'\x01' * 32) + sshstr(subject_pk) +
            struct.pack('>QI', 7, 1) + sshstr(b'fuzz-cert') + sshstr(sshstr(b'root')) +
            struct.pack('>QQ', 0, 2 ** 64 - 1) + sshstr(b'') + sshstr(sshstr(b'permit-pty') + sshstr(b'')) +
            sshstr(b'') + sshstr(sshstr(b'ssh-ed25519') + sshstr(pub(ca_sk.public_key()))))
    return body + sshstr(sshstr(b'ssh-ed25519') + sshstr(ca_sk.sign(body)))


cert = ed_cert(add_pk, ed25519.Ed25519PrivateKey.from_private_bytes(b'\x77' * 32))
agent['add-cert-sign-remove'] = (
    amsg(17, add_body) +
    amsg(17, sshstr(b'ssh-ed25519-cert-v01@openssh.com') + sshstr(cert) + sshstr(add_pk) +
         sshstr(b'\x66' * 32 + add_pk) + sshstr(b'fuzz@example')) + amsg(11) +
    amsg(13, sshstr(cert) + sshstr(b'm') + struct.pack('>I', 0)) +
    amsg(18, sshstr(sshstr(b'ssh-ed25519') + sshstr(add_pk))) + amsg(11) + amsg(18, sshstr(cert)) + amsg(11))
for name, data in agent.items():
    put('agent', name, data)

# key files (format version 1, daemon/keyfile.c)
def keyfile(label, typ=0, flags=0, created=1700000000, seed=b'\x55' * 32):
    lb = label.encode()
    return b'SIGILKEY' + bytes([1, typ, flags, len(lb)]) + struct.pack('>q', created) + lb + seed

put('keyfile', 'ed25519', b'\x01' + keyfile('alice'))
put('keyfile', 'x25519-exportable', b'\x01' + keyfile('bob.x', 1, 1))
put('keyfile', 'fixed-name', b'\x00' + keyfile('fuzz'))
put('keyfile', 'bad-version', b'\x01' + keyfile('carol')[:8] + b'\x02' + keyfile('carol')[9:])
put('keyfile', 'truncated', b'\x01' + keyfile('dave')[:-1])

# sealed key files: bit 0 set = built by keyfile_write_sealed in the target,
# then one byte changed (last two bytes position, XOR)
put('keyfile-sealed', 'intact', b'\x01' + bytes([0, 1, 0, 1, 2, 7, 5]) + b'\x55' * 64 + b'label00' + b'p' * 5 + b'\x00\x00\x00')
put('keyfile-sealed', 'changed-header', b'\x01' + bytes([1, 0, 0, 1, 2, 3, 0]) + b'\x56' * 64 + b'abc' + b'\x00\x0a\x01')
put('keyfile-sealed', 'changed-body', b'\x01' + bytes([0, 0, 9, 9, 9, 3, 0]) + b'\x57' * 64 + b'xyz' + b'\x00\x50\x80')
put('keyfile-sealed', 'format1', b'\x00' + keyfile('fuzz'))
put('keyfile-sealed', 'garbage', b'\x00SIGILKEY\x02' + bytes(60))

# Ed25519 verify: flags bit 0 = sign with the seed, bits 1-3 = tweak
for tweak in range(8):
    for constructed in (0, 1):
        flags = constructed | (tweak << 1)
        a = pk if not constructed else bytes(range(32))
        put('ed25519-verify', 'c%d-t%d' % (constructed, tweak),
            bytes([flags]) + a + sig + bytes([tweak * 5, 0x81]) + msg)

# point encodings: base point, identity, small order, non-canonical, invalid
B = bytes.fromhex('5866666666666666666666666666666666666666666666666666666666666666')
p_enc = (2**255 - 19).to_bytes(32, 'little')
put('ge-decode', 'base', B)
put('ge-decode', 'identity', (1).to_bytes(32, 'little'))
put('ge-decode', 'small-order', bytes.fromhex(
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05'
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a') + p_enc)
put('ge-decode', 'noncanonical', (2**255 - 19 + 1).to_bytes(32, 'little') +
    (2**255 - 1).to_bytes(32, 'little') + bytes(31) + b'\x80' + (1 + 2**255).to_bytes(32, 'little'))
put('ge-decode', 'pk', pk)

# X25519: RFC 7748 section 5.2 first vector, base point 9, small-order u
put('x25519', 'rfc7748', bytes.fromhex(
    'a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4'
    'e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c'))
put('x25519', 'base', b'\x77' * 32 + (9).to_bytes(32, 'little') + b'\x88' * 32)
put('x25519', 'zero-u', b'\x77' * 64 + bytes(32))
put('x25519', 'u-p', b'\x77' * 32 + p_enc)

# signature files from the real tools
with tempfile.TemporaryDirectory() as t:
    data = os.path.join(t, 'data')
    with open(data, 'wb') as f:
        f.write(b'sigil fuzz seed\n')
    sk_path = os.path.join(t, 'id')
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'fuzz@example', '-f', sk_path], check=True)
    subprocess.run(['ssh-keygen', '-q', '-Y', 'sign', '-n', 'file', '-f', sk_path, data], check=True)
    put('sshsig', 'ssh-keygen', open(data + '.sig', 'rb').read())
    os.unlink(data + '.sig')
    subprocess.run(['ssh-keygen', '-q', '-Y', 'sign', '-n', 'git', '-O', 'hashalg=sha256', '-f', sk_path, data],
                   check=True)
    put('sshsig', 'ssh-keygen-sha256', open(data + '.sig', 'rb').read())
    put('keys', 'openssh-pub', b'\x00' + open(sk_path + '.pub', 'rb').read())
    put('keys', 'openssh-sk', bytes([3 << 1]) + open(sk_path, 'rb').read())
    put('keys', 'allowed-signers', b'\x01' + b'fuzz@example namespaces="file" ' + open(sk_path + '.pub', 'rb').read())
    put('keys', 'hex', bytes([1 << 1]) + (b'11' * 32))

    ms_sk, ms_pk = os.path.join(t, 'm.key'), os.path.join(t, 'm.pub')
    subprocess.run(['minisign', '-G', '-W', '-s', ms_sk, '-p', ms_pk], check=True, capture_output=True)
    subprocess.run(['minisign', '-S', '-s', ms_sk, '-m', data, '-t', 'trusted fuzz'], check=True,
                   capture_output=True)
    put('minisign', 'minisign', open(data + '.minisig', 'rb').read())
    subprocess.run(['minisign', '-S', '-l', '-s', ms_sk, '-m', data, '-x', data + '.legacy'], check=True,
                   capture_output=True)
    put('minisign', 'minisign-legacy', open(data + '.legacy', 'rb').read())
    put('keys', 'minisign-pub', b'\x00' + open(ms_pk, 'rb').read())
    put('keys', 'minisign-sk', bytes([4 << 1]) + open(ms_sk, 'rb').read())

    sf_sk, sf_pk = os.path.join(t, 's.sec'), os.path.join(t, 's.pub')
    subprocess.run(['signify-openbsd', '-G', '-n', '-s', sf_sk, '-p', sf_pk], check=True)
    subprocess.run(['signify-openbsd', '-S', '-s', sf_sk, '-m', data], check=True)
    put('signify', 'signify', open(data + '.sig', 'rb').read())
    put('keys', 'signify-pub', b'\x00' + open(sf_pk, 'rb').read())
    put('keys', 'signify-sk', bytes([5 << 1]) + open(sf_sk, 'rb').read())

# ---- age-plugin: what age 1.1.1 writes in identity-v1 phase 1 (the first
# seed as AGEDEBUG=plugin shows it), then answers to phase 2 ----
ID = b'AGE-PLUGIN-SIGIL-1DPHHXAQF32RY6'  # "host"
X1 = b'-> recipient-stanza 0 X25519 VREG3wa2A0cgZXzTl3VXOdK08Yocel5u19kpIKLWnmM\n' \
     b'4vtsXWMU9ODUx8FDgjxfb32+7byoXf1y6DkqlURPhm8\n'
X2 = b'-> recipient-stanza 0 X25519 NvuXvJR2PjPOvsa4874tjR6eCi+Js/KzfZrQg2xEiHQ\n' \
     b'iWzBN4zo0fvoPIg6Sk+YqZVqU8pT3bgGpEOdebK0/Mo\n'
DONE = b'-> done\n\n'
put('age-plugin', 'age-1.1.1-two-x25519', b'-> add-identity ' + ID + b'\n\n' + X1 + X2 + DONE + b'-> ok\n\n')
put('age-plugin', 'grease-and-others', b'-> add-identity ' + ID + b'\n\n-> 1#!x+ a b\n' + b'QUFB' * 16 +
    b'\nQUFB\n-> recipient-stanza 0 ssh-ed25519 Ym9v YmFy\nAAAA\n' +
    b'-> recipient-stanza 1 scrypt c2FsdA 18\nAAAA\n' + X1.replace(b' 0 ', b' 2 ') + DONE)
put('age-plugin', 'bad-identity', b'-> add-identity AGE-PLUGIN-OTHER-1QQQQQQ\n\n-> add-identity ' + ID +
    b'\n\n' + X1 + DONE)
put('age-plugin', 'bad-x25519', b'-> add-identity ' + ID + b'\n\n-> recipient-stanza 0 X25519 short\n'
    b'AAAA\n-> recipient-stanza 0 X25519 a b\n\n' + X2.replace(b' 0 ', b' 1 ') + DONE)
put('age-plugin', 'indices-down', b'-> add-identity ' + ID + b'\n\n' + X1.replace(b' 0 ', b' 3 ') + X2 + DONE)
put('age-plugin', 'truncated', b'-> add-identity ' + ID + b'\n\n' + X1[:60])

# ---- rpc: the age methods, with real age files for fuzz-daemon.h's "x"
# (x25519, seed 0x22 * 32), made by age 1.1.1 ----
def bech32(hrp, data):
    cs = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l'
    gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]
    acc, bits, d5 = 0, 0, []
    for b in data:
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5:
            bits -= 5
            d5.append((acc >> bits) & 31)
    if bits:
        d5.append((acc << (5 - bits)) & 31)
    chk = 1
    for v in [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp] + d5 + [0] * 6:
        top, chk = chk >> 25, ((chk & 0x1ffffff) << 5) ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    chk ^= 1
    return hrp + '1' + ''.join(cs[v] for v in d5 + [(chk >> (5 * (5 - i))) & 31 for i in range(6)])


def age_file(rcpt, plaintext):
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, 'p')
        with open(src, 'wb') as f:
            f.write(plaintext)
        return subprocess.run(['age', '-r', rcpt, src], check=True, capture_output=True).stdout


def b64d(s):
    import base64
    return base64.b64decode(s + '=' * (-len(s) % 4))


x_pk = x25519.X25519PrivateKey.from_private_bytes(b'\x22' * 32).public_key().public_bytes(
    serialization.Encoding.Raw, serialization.PublicFormat.Raw)
x_rcpt = bech32('age', x_pk)
moved = b'sigil-key-v1\n' + bytes([0, 1, 3]) + b'mov' + b'\x33' * 32 + b'\x00\x00'
wrapped = age_file(x_rcpt, moved)
hdr = wrapped.split(b'\n')
share, body = b64d(hdr[1].split(b' ')[2].decode()), b64d(hdr[2].decode())
other = age_file(bech32('age', b'\x09' + bytes(31)), b'other')
o_share, o_body = b64d(other.split(b'\n')[1].split(b' ')[2].decode()), b64d(other.split(b'\n')[2].decode())
age_streams = {
    'age-unwrap': req(40, 'age.unwrap', {'key': 'x', 'share': share, 'body': body}),
    'age-unwrap-other': req(41, 'age.unwrap', {'key': 'x', 'share': o_share, 'body': o_body}),
    'age-unwrap-small': req(42, 'age.unwrap', {'key': 'x', 'share': b'\x00' * 32, 'body': body}),
    'export-wrapped': req(43, 'key.import', {'type': 'x25519', 'label': 'imp', 'seed': b'\x44' * 32,
                                             'exportable': True}) +
                      req(44, 'key.export_wrapped', {'label': 'imp', 'recipient': x_rcpt, 'armor': True}) +
                      req(45, 'key.export_wrapped', {'label': 'x', 'recipient': x_rcpt}),
    'import-wrapped': req(46, 'key.import_wrapped', {'label': 'mov', 'key': 'x', 'file': wrapped}) +
                      req(47, 'sign', {'key': 'mov', 'message': b'm'}),
    'import-wrapped-bad': req(48, 'key.import_wrapped', {'label': 'mov', 'key': 'x', 'file': wrapped[:-3]}) +
                          req(49, 'key.import_wrapped', {'label': 'mov', 'key': 'ed', 'file': other}),
}
for name, data in age_streams.items():
    put('rpc', name, data)
print('seeds written to', out)
