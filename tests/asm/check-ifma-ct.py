#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-ifma-ct.py OBJDUMP ARCHIVE [FUNC] - the object code of the AVX-512
IFMA X25519 ladder (x25519_ifma_ladder, crypto/asm/amd64/x25519_ifma.c; or
FUNC, e.g. base_ifma_lanes, the eight-lane fixed base of
crypto/asm/amd64/base_ifma.c, whose one loop walks the comb's rows) is
constant time by construction. Valgrind 3.19 cannot run AVX-512, so ctgrind
cannot execute it; this reads the compiled routine instead (objdump -d -M
intel of the archive) and fails on:

  1. any conditional jump but one: the backward jump of the ladder's loop
     (its counter counts the 255 steps, public); any other jump, loop or
     call, direct or indirect; a division (DIV, IDIV: data-dependent time);
  2. any memory operand whose address uses a register that is not a pointer
     argument (rdi, rsi, rdx, rcx at entry, or a plain register copy of one),
     the stack pointer or rip (the constant tables), or a public offset of
     one (LEA of such registers and constants; ADD or SUB of a constant, the
     loop's walk over a table; a register set to a constant, a loop
     counter): so no address depends on data. A register
     stops being a pointer once anything else writes it; the loop's back
     edge is followed to a fixed point. LEA only computes (it reads no
     memory).

Then (the check of the check) it plants violations in a copy of the same
code, one at a time (a conditional jump, an indirect call, an address with a
data index, a pointer register reloaded from memory before a store, a
division, a gather) and expects each to be caught. TAP output.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import objbodies  # noqa: E402 (the object-code checks' one reader of objdump)

FUNC = "x25519_ifma_ladder"
ARGS = {"rdi", "rsi", "rdx", "rcx"}
ALWAYS = {"rsp", "rip"}
GPR64 = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"] + ["r%d" % i for i in range(8, 16)]
ALIAS = {}
for r in ["ax", "bx", "cx", "dx"]:
    ALIAS.update({"r" + r: "r" + r, "e" + r: "r" + r, r: "r" + r, r[0] + "l": "r" + r, r[0] + "h": "r" + r})
for r in ["si", "di", "bp", "sp"]:
    ALIAS.update({"r" + r: "r" + r, "e" + r: "r" + r, r: "r" + r, r + "l": "r" + r})
for i in range(8, 16):
    for suf in ["", "d", "w", "b"]:
        ALIAS["r%d%s" % (i, suf)] = "r%d" % i
ALIAS["rip"] = "rip"
# Instructions that write no register operand of theirs, or several.
NOWRITE = {"cmp", "test", "push", "bt", "nop", "ret", "vzeroupper", "endbr64"}
MULTIWRITE = {"mulx", "xchg", "xadd", "cmpxchg", "mul", "imul", "cpuid", "rdtsc", "cqo", "cdq"}
COND = re.compile(r"^(j(?!mp)[a-z]+|loop[a-z]*|jrcxz|jecxz)$")


def parse(text):
    """FUNC's instructions: (address, mnemonic, operands)."""
    out = []
    for addr, ins in objbodies.bodies(text, [FUNC], intel=True)[FUNC]:
        ins = re.sub(r"^((bnd|notrack|rep[a-z]*|lock|data16|cs)\s+)+", "", ins)
        parts = ins.split(None, 1)
        if parts:
            out.append((addr, parts[0], parts[1] if len(parts) > 1 else ""))
    return out


def operands(ops):
    res, depth, cur = [], 0, ""
    for ch in ops:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            res.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        res.append(cur.strip())
    return res


def regs_in(s):
    return {ALIAS.get(t, t) for t in re.findall(r"[a-z][a-z0-9]*", s) if t in ALIAS or re.match(r"^[xyz]mm[0-9]+$", t)}


def check(ins):
    """Violations (strings) in the instruction list."""
    bad = []
    if len(ins) < 200 or not any(m.startswith("vpmadd52") for _, m, _ in ins):
        return ["%s not found or too short (%d instructions)" % (FUNC, len(ins))]
    addrs = [a for a, _, _ in ins]
    conds = [(i, a, m, o) for i, (a, m, o) in enumerate(ins) if COND.match(m)]
    head = None
    if len(conds) != 1:
        bad.append("expected exactly one conditional jump (the loop), found %d: %s"
                   % (len(conds), ", ".join("%x %s" % (a, m) for _, a, m, _ in conds)))
    else:
        i, a, m, o = conds[0]
        t = re.match(r"^([0-9a-f]+)", o)
        target = int(t.group(1), 16) if t else -1
        if target >= a or target not in addrs:
            bad.append("the conditional jump at %x is not a backward jump inside the routine" % a)
        else:
            head = addrs.index(target)
    for a, m, o in ins:
        if m in ("jmp", "call", "callq", "jmpq") or m.startswith("call") or m.startswith("jmp"):
            bad.append("%x: %s %s (jump or call)" % (a, m, o))
        if m in ("div", "idiv") or m.startswith("vpgather") or m.startswith("vgather") or "scatter" in m:
            bad.append("%x: %s %s" % (a, m, o))

    def step(state, idx, report):
        a, m, o = ins[idx]
        ops = operands(o)
        if m != "lea" and not m.startswith("nop"):
            for op in ops:
                if "[" in op:
                    mem = op[op.index("["):]
                    used = regs_in(mem)
                    wrong = sorted(r for r in used if r not in state and r not in ALWAYS)
                    if wrong and report:
                        bad.append("%x: %s %s: address uses %s (not a pointer argument, the stack or rip)"
                                   % (a, m, o, ",".join(wrong)))
        gpr = [ALIAS[op] for op in ops if op in ALIAS]
        if m in NOWRITE or COND.match(m):
            return state
        if m == "xchg" and len(ops) == 2 and ops[0] == ops[1]:
            return state  # XCHG AX,AX: the assembler's 2-byte NOP (padding)
        if m in MULTIWRITE:
            return state - set(gpr) - {"rax", "rdx"}
        if ops and ops[0] in ALIAS:
            dst = ALIAS[ops[0]]
            if dst == "rsp":
                return state
            # a public offset of a pointer: LEA of pointers, rip and
            # constants; a constant added to or taken from a pointer; a
            # constant (MOV of an immediate, XOR of a register with itself)
            # written to a whole 32- or 64-bit register: a loop counter
            whole = re.match(r"^(r[a-z]{2}|r[0-9]+|e[a-z]{2}|r[0-9]+d)$", ops[0])
            if whole and len(ops) == 2 and ((m == "xor" and ops[0] == ops[1]) or
                                            (m == "mov" and re.match(r"^(0x[0-9a-f]+|[0-9]+)$", ops[1]))):
                return state | {dst}
            if m == "lea" and len(ops) == 2 and re.match(r"^r", ops[0]) \
                    and all(r in state or r in ALWAYS for r in regs_in(ops[1])):
                return state | {dst}
            if m in ("add", "sub") and len(ops) == 2 and dst in state and re.match(r"^r", ops[0]) \
                    and re.match(r"^(0x[0-9a-f]+|[0-9]+)$", ops[1]):
                return state
            if m == "mov" and len(ops) == 2 and ops[1] in ALIAS and ALIAS[ops[1]] in state \
                    and re.match(r"^r", ops[0]) and re.match(r"^r", ops[1]):
                return state | {dst}
            return state - {dst}
        return state

    # fixed point over the one loop: the state at its head is the entry
    # path's state met with the back edge's (which only shrinks)
    back = set(ARGS) | set(GPR64)
    for _ in range(20):
        state, new_back = set(ARGS), back
        for idx in range(len(ins)):
            if idx == head:
                state = state & back
            state = step(state, idx, False)
            if head is not None and idx == conds[0][0]:
                new_back = state
        if new_back == back:
            break
        back = new_back
    state = set(ARGS)
    for idx in range(len(ins)):
        if idx == head:
            state = state & back
        state = step(state, idx, True)
    return bad


def plant(ins):
    """Copies of ins with one violation each: (description, instructions)."""
    mid = len(ins) // 2
    a0 = ins[mid][0]
    stores = [i for i, (a, m, o) in enumerate(ins) if m == "mov" and re.match(r"^QWORD PTR \[r(?!sp|ip)", o)]
    st = stores[0] if stores else mid
    base = re.search(r"\[([a-z0-9]+)", ins[st][2]).group(1) if stores else "rdi"
    out = [
        ("a conditional jump on data", ins[:mid] + [(a0, "je", "%x <x>" % ins[-1][0])] + ins[mid:]),
        ("an indirect call", ins[:mid] + [(a0, "call", "rax")] + ins[mid:]),
        ("an address with a data index", ins[:mid] + [(a0, "mov", "rax,QWORD PTR [rsp+rbx*8+0x10]")] + ins[mid:]),
        ("a pointer reloaded from memory before a store",
         ins[:st] + [(ins[st][0], "mov", "%s,QWORD PTR [rsp-0x20]" % base)] + ins[st:]),
        ("a division", ins[:mid] + [(a0, "div", "rcx")] + ins[mid:]),
        ("a partial register write before a load",
         ins[:mid] + [(a0, "mov", "dil,0x1"), (a0, "vmovdqa64", "zmm1,ZMMWORD PTR [rdi]")] + ins[mid:]),
        ("a pointer advanced by data before a load",
         ins[:mid] + [(a0, "add", "rdi,rbx"), (a0, "vmovdqa64", "zmm1,ZMMWORD PTR [rdi]")] + ins[mid:]),
        ("a gather", ins[:mid] + [(a0, "vpgatherqq", "ymm1{k1},[rsp+ymm2*8]")] + ins[mid:]),
    ]
    return out


def main():
    global FUNC
    objdump, archive = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3:
        FUNC = sys.argv[3]
    text = objbodies.disassemble(objdump, archive, intel=True)
    ins = parse(text)
    planted = plant(ins) if ins else []
    print("1..%d" % (1 + len(planted)))
    bad = check(ins)
    if bad:
        print("not ok 1 - %s: straight-line but its loop, pointer-only addresses" % FUNC)
        for b in bad[:40]:
            print("# " + b)
    else:
        print("ok 1 - %s: %d instructions, one conditional jump (the public loop), "
              "no call, no division, every address a pointer argument, the stack or rip "
              "or a public offset of one" % (FUNC, len(ins)))
    fail = bool(bad)
    for n, (desc, mut) in enumerate(planted, 2):
        caught = check(mut)
        if caught:
            print("ok %d - planted %s: caught (%s)" % (n, desc, caught[0]))
        else:
            print("not ok %d - planted %s: not caught" % (n, desc))
            fail = True
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
