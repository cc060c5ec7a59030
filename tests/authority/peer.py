#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""peer.py - the second uid of tests/authority/test_authority.py.

test_authority.py runs this script as uid 65534 (setpriv) with one JSON
program as argv[1]: {"main": socket path, "agent": agent socket path,
"steps": [...]}. Each step runs in order and gives one JSON result; the
list is printed as one JSON line on stdout. Binary values travel as
{"$b": hex}. Steps:

  {"rpc": METHOD, "params": {...}, "conn": NAME}  -> {"ok": result} | {"err": code, "msg": message}
  {"agent": "identities"}                         -> {"ok": [pk...]}
  {"agent": "sign", "pk": b, "data": b}           -> {"ok": signature | null}
  {"agent": "add", "seed": b, "pk": b, "comment": s, "sk"?: b, "lifetime"?: n, "confirm"?: bool}
  {"agent": "remove", "pk": b} | {"agent": "remove_all"}
  {"agent": "lock"|"unlock", "pass": s}           -> {"ok": bool} (SUCCESS)
  {"agent": "raw", "msg": b}                      -> {"ok": answer} | {"closed": why} (the
               connection was refused or closed: no answer)
  {"hold": N}: opens N main-socket connections, each asking hello ->
               {"ok": [ "ok" | error code | "closed" ...]}; they stay open
               until stdin closes (after the JSON line is printed).

Main-socket connections are kept by NAME (default "a"), the agent
connection is one for the whole program.
"""
import json
import os
import select
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import msgpack  # noqa: E402
import agentproto  # noqa: E402
import sigiltest  # noqa: E402


def dec(v):
    if isinstance(v, dict):
        if set(v) == {"$b"}:
            return bytes.fromhex(v["$b"])
        return {k: dec(x) for k, x in v.items()}
    if isinstance(v, list):
        return [dec(x) for x in v]
    return v


def enc(v):
    if isinstance(v, (bytes, bytearray)):
        return {"$b": bytes(v).hex()}
    if isinstance(v, dict):
        return {k: enc(x) for k, x in v.items()}
    if isinstance(v, list):
        return [enc(x) for x in v]
    return v


def hold(path, n):
    socks, codes = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(path)
        except OSError as e:
            codes.append("connect:" + type(e).__name__)
            continue
        socks.append(s)
    # a refused connection gets one error (msgid nil) at once: read it
    # before asking anything, then ask hello on the others
    select.select([], [], [], 0.5)
    for s in socks:
        up = msgpack.Unpacker(raw=False)
        try:
            r, _, _ = select.select([s], [], [], 0)
            if not r:
                s.sendall(msgpack.packb([0, 1, "hello", [{}]], use_bin_type=True))
            obj = None
            while obj is None:
                data = s.recv(65536)
                if not data:
                    break
                up.feed(data)
                for obj in up:
                    break
            if obj is None:
                codes.append("closed")
            elif obj[2] is None:
                codes.append("ok")
            else:
                codes.append(obj[2].get("code", "?"))
        except OSError as e:
            codes.append("closed:" + type(e).__name__)
    return socks, codes


def main():
    prog = json.loads(sys.argv[1])
    conns = {}
    agent = None
    out = []
    held = []
    for st in prog["steps"]:
        st = dec(st)
        try:
            if "rpc" in st:
                name = st.get("conn", "a")
                if name not in conns:
                    conns[name] = sigiltest.Client(prog["main"])
                try:
                    out.append({"ok": enc(conns[name].call(st["rpc"], st.get("params")))})
                except sigiltest.RpcError as e:
                    out.append({"err": e.code, "msg": e.message})
            elif "agent" in st:
                if agent is None:
                    agent = agentproto.Agent(prog["agent"])
                op = st["agent"]
                if op == "identities":
                    out.append({"ok": [enc(pk) for pk, _ in agent.identities()]})
                elif op == "sign":
                    out.append({"ok": enc(agent.sign(st["pk"], st["data"]))})
                elif op == "add":
                    kw = {k: st[k] for k in ("sk", "lifetime", "confirm") if k in st}
                    out.append({"ok": agent.add(st["seed"], st["pk"], st.get("comment", ""), **kw)})
                elif op == "remove":
                    out.append({"ok": agent.remove(st["pk"])})
                elif op == "remove_all":
                    out.append({"ok": agent.remove_all()})
                elif op in ("lock", "unlock"):
                    out.append({"ok": getattr(agent, op)(st["pass"])})
                elif op == "raw":
                    try:
                        out.append({"ok": enc(agent.call(st["msg"]))})
                    except (EOFError, OSError) as e:
                        out.append({"closed": repr(e)})
                else:
                    out.append({"exc": "unknown agent step " + op})
            elif "hold" in st:
                socks, codes = hold(prog["main"], st["hold"])
                held += socks
                out.append({"ok": codes})
            else:
                out.append({"exc": "unknown step"})
        except Exception as e:  # reported to the test, which decides
            out.append({"exc": repr(e)})
    print(json.dumps(out), flush=True)
    if held:
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
