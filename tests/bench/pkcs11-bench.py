#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pkcs11-bench.py - C_Sign throughput: sigil-pkcs11.so vs SoftHSM2 (issue 20).

Usage: tests/bench/pkcs11-bench.py [--build DIR] [--rounds R] [--signs N] [--json FILE]

Both modules are driven by the same consumer, python3-pykcs11, in one
process and one thread: Session.sign(key, 64-byte message, CKM_EDDSA)
(C_SignInit, C_Sign for the length, C_Sign), N signatures per module per
round, R rounds with the order of the two modules alternating, so that both
see the same machine. sigil signs with a key in the real sigild (DIR's
daemon/sigild, started on a temporary socket with its defaults);
SoftHSM2 (Debian's 2.6.1) with its own Ed25519 key, made by
C_GenerateKeyPair in a fresh token under a temporary SOFTHSM2_CONF.
Every signature of the first round is checked with pyca/cryptography.
Prints each round, the median signatures/s of each with [min .. max] over
the rounds, and the ratio of the medians (the issue's target: >= 3).
Not a test: speed is never asserted. Use a release build
(meson setup DIR --buildtype=release).
"""
import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import PyKCS11
from PyKCS11 import (CKA_CLASS, CKA_EC_PARAMS, CKA_EC_POINT, CKA_LABEL, CKA_SIGN, CKA_TOKEN, CKA_VERIFY,
                     CKF_RW_SESSION, CKF_SERIAL_SESSION, CKM_EC_EDWARDS_KEY_PAIR_GEN, CKM_EDDSA,
                     CKO_PRIVATE_KEY, CKO_PUBLIC_KEY)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SOFTHSM = "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so"
PIN = "123456"


def start_sigild(build, tmp):
    sock = os.path.join(tmp, "run", "sigild.sock")
    log = open(os.path.join(tmp, "sigild.log"), "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_", "WATCHDOG_"))}
    proc = subprocess.Popen([os.path.join(build, "daemon", "sigild"), "--foreground", "--socket", sock,
                             "--state-dir", os.path.join(tmp, "state"), "--allow-unlocked-memory"],
                            stdout=log, stderr=log, env=env)
    deadline = time.time() + 15
    while not os.path.exists(sock):
        if proc.poll() is not None or time.time() > deadline:
            raise RuntimeError("sigild did not start: see " + log.name)
        time.sleep(0.01)
    subprocess.run([os.path.join(build, "client", "sigil"), "-s", sock, "keygen", "bench"], check=True,
                   stdout=subprocess.DEVNULL)
    return proc, sock


def softhsm_token(tmp):
    tokens = os.path.join(tmp, "softhsm-tokens")
    os.makedirs(tokens)
    conf = os.path.join(tmp, "softhsm2.conf")
    open(conf, "w").write(f"directories.tokendir = {tokens}\nobjectstore.backend = file\nlog.level = ERROR\n")
    os.environ["SOFTHSM2_CONF"] = conf
    subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", "bench", "--pin", PIN,
                    "--so-pin", PIN], check=True, stdout=subprocess.DEVNULL)


class Signer:
    def __init__(self, name, path, login):
        self.name = name
        self.lib = PyKCS11.PyKCS11Lib()
        self.lib.load(path)
        slot = self.lib.getSlotList(tokenPresent=True)[0]
        self.s = self.lib.openSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION)
        if login:
            self.s.login(PIN)
            self.s.generateKeyPair(
                [(CKA_TOKEN, True), (CKA_EC_PARAMS, bytes.fromhex("06032b6570")), (CKA_LABEL, "bench"),
                 (CKA_VERIFY, True)],
                [(CKA_TOKEN, True), (CKA_LABEL, "bench"), (CKA_SIGN, True)],
                PyKCS11.Mechanism(CKM_EC_EDWARDS_KEY_PAIR_GEN))
        self.key = self.s.findObjects([(CKA_LABEL, "bench"), (CKA_CLASS, CKO_PRIVATE_KEY)])[0]
        pub = self.s.findObjects([(CKA_LABEL, "bench"), (CKA_CLASS, CKO_PUBLIC_KEY)])[0]
        point = bytes(self.s.getAttributeValue(pub, [CKA_EC_POINT], allAsBinary=True)[0])
        self.pk = Ed25519PublicKey.from_public_bytes(point[-32:])
        self.mech = PyKCS11.Mechanism(CKM_EDDSA)

    def round(self, msgs, check):
        sign, key, mech = self.s.sign, self.key, self.mech
        t0 = time.perf_counter()
        sigs = [sign(key, m, mech) for m in msgs]
        dt = time.perf_counter() - t0
        if check:
            for m, sig in zip(msgs, sigs):
                self.pk.verify(bytes(sig), m)
        return len(msgs) / dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("SIGIL_BUILD_ROOT", "build"))
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--signs", type=int, default=3000)
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    module = os.path.join(a.build, "client", "pkcs11", "sigil-pkcs11.so")
    for need in (module, SOFTHSM, shutil.which("softhsm2-util")):
        if not need or not os.path.exists(need):
            sys.exit(f"missing: {need} (build sigil; apt-get install softhsm2)")
    tmp = tempfile.mkdtemp(prefix="sigil-p11bench-")
    proc = None
    try:
        proc, sock = start_sigild(a.build, tmp)
        os.environ["SIGIL_SOCK"] = sock
        softhsm_token(tmp)
        signers = [Signer("sigil", module, False), Signer("softhsm2", SOFTHSM, True)]
        msgs = [os.urandom(64) for _ in range(a.signs)]
        for s in signers:  # warm-up (connection, caches)
            s.round(msgs[:200], False)
        rates = {s.name: [] for s in signers}
        print(f"# {a.rounds} rounds x {a.signs} C_Sign of 64 bytes per module, python3-pykcs11 "
              f"{PyKCS11.__version__ if hasattr(PyKCS11, '__version__') else ''}, one thread", flush=True)
        for r in range(a.rounds):
            order = signers if r % 2 == 0 else signers[::-1]
            for s in order:
                rates[s.name].append(s.round(msgs, check=(r == 0)))
            print(f"round {r + 1:2d}: sigil {rates['sigil'][-1]:8.0f}/s  softhsm2 {rates['softhsm2'][-1]:8.0f}/s  "
                  f"ratio {rates['sigil'][-1] / rates['softhsm2'][-1]:.2f}", flush=True)
        med = {k: statistics.median(v) for k, v in rates.items()}
        ratios = [x / y for x, y in zip(rates["sigil"], rates["softhsm2"])]
        for k, v in rates.items():
            print(f"{k:9s} median {med[k]:8.0f} signatures/s  [{min(v):.0f} .. {max(v):.0f}]")
        print(f"ratio of the medians: {med['sigil'] / med['softhsm2']:.2f}  "
              f"(per round: median {statistics.median(ratios):.2f} [{min(ratios):.2f} .. {max(ratios):.2f}])")
        if a.json:
            json.dump({"rounds": a.rounds, "signs": a.signs, "rates": rates, "median": med,
                       "ratio": med["sigil"] / med["softhsm2"], "ratios": ratios,
                       "machine": platform.machine(), "cpus": os.cpu_count()}, open(a.json, "w"), indent=1)
        for s in signers:
            s.s.closeSession()
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
