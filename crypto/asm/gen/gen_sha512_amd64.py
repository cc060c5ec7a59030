#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Generate crypto/asm/amd64/sha512_avx2.S: the SHA-512 block functions
sha512_blocks_avx2 for amd64 CPUs with AVX2, BMI1 and BMI2 and
sha512_blocks_avx512 for those that also have AVX-512 F and VL (FIPS 180-4
section 6.4.2), assembly twins of sha512_blocks_generic in crypto/sha512.c,
with the same contract (crypto/sha512.h):

  void sha512_blocks_avx2(uint64_t state[8], const uint8_t *in, size_t nblocks);
  void sha512_blocks_avx512(uint64_t state[8], const uint8_t *in, size_t nblocks);
  state <- compress(state, block) for each of the nblocks 128-byte blocks
  at in; nblocks may be 0; in needs no alignment.

The two are written by the same code and differ only in the vector
instructions of a schedule step: AVX2 has no 64-bit rotation (a rotation
is two shifts and an XOR, ROTR 8 a byte shuffle), AVX-512VL has VPRORQ,
and VPTERNLOGQ XORs three registers in one instruction: 15 instructions a
step instead of 23. On Zen 4 (EPYC 9004) that does not make long messages
faster (the scalar rounds bound them, and the schedule was already hidden
beside them) but one- and two-block calls 2-3 % faster, where the first
pair computes its schedule densely (docs/performance.md, 2026-12-04).

Method (written from FIPS 180-4; the comment beside each instruction of the
output says what it computes):

  1. Blocks go by pairs, A and B. The message schedule of both is computed
     at once in 256-bit registers, X[j] = { W_2j, W_2j+1 of A | W_2j, W_2j+1
     of B } (j = 0..39): one vector step gives four words, since the
     nearest word W_t needs is W_t-2. X[j-8] .. X[j-1] live in ymm0..ymm7
     (X[j] in ymm(j mod 8)); each step also adds { K_2j, K_2j+1 } (a table
     with every pair twice, one per 128-bit lane) and stores W + K to the
     stack, 32 bytes per j: A's two words, then B's.
  2. The scalar rounds (the eight variables in registers, renamed instead
     of moved: after a round the register of h holds the new a and that of
     d the new e) read W + K from there. The vector steps run beside them,
     thinly: a step is 23 instructions, and one beside every two rounds
     (all of a pair's steps during its block A) cost 20 % on those rounds
     on Zen 3 (the core issues six instructions a cycle and a round is
     24), so a pair's schedule is spread over 128 of the 160 rounds, one
     step every four rounds:
       block B of pair p, rounds 16..23: pair p+1's X[0..7] (its first 16
         words; B has read entries 0..7 by then), rounds 24..47: its steps
         8..15, rounds 48..79: its steps 16..23 (each entry is written
         after B has read it);
       block A of pair p+1, rounds 0..31: steps 24..31, rounds 32..63:
         steps 32..39 (each well before the round that reads it);
     the first pair has nothing before it: its block A computes all its
     steps beside rounds 0..63, one every two rounds (computing steps
     8..23 before the first round instead cost about 10 % on one- and
     two-block calls, which are what signing hashes). The last pair loads
     nothing (no next pair to schedule); a lone last block is a pair
     with B = A whose B is not run; the last pair's B runs its rounds
     16..79 in the 16-round body without schedule work.
     Code: one body of 32 rounds with 8 steps (run three times a pair: B's
     rounds 48..79, A's 0..31 and 32..63; the K cursor says which), one of
     16 rounds without (A's 64..79, B's 0..15), B's rounds 16..47 with the
     loads and steps 8..15, and the first pair's 16 rounds with 8 steps
     (4 times): about 100 rounds of code, which stays in the micro-op
     cache (the whole 160 rounds unrolled, 22 KiB, do not).
  3. A round is 22 ALU instructions (and two register moves, which the
     renamer absorbs), since this is what bounds it on a core with four
     integer ALUs; with b ^ c carried from the previous round (its a ^ b),
       Ch(e, f, g)  = (e & f) + (~e & g)     (no bit in common: + is ^; ANDN)
       Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b
       S0, S1: three BMI2 RORX (no flags, three operands) and two XOR each
       T1 = h + (W + K) + Ch + S1(e);  e' = d + T1;  a' = T1 + Maj + S0(a)
     The sums are LEA where both terms are registers: it writes no flags,
     and measured 3-4 % faster than ADD on Zen 3.

Constant time: no branch depends on the message or the state (the only
jumps are on public values: the block count and the cursors, which step
by constants), and every memory operand is a register (the stack pointer,
the input and state pointers, the cursors) or rip, plus a constant (no
index register). tests/asm/check-sha512-asm.sh checks the object file for
both, in both functions, and that they are the same scalar code and jumps
outside the vector schedule (ctgrind runs the AVX2 one; Valgrind cannot
run AVX-512 code). The W + K array on the stack derives from the message:
it is wiped before return, and VZEROALL clears every vector register
(ymm0-15 and, with AVX-512, the upper halves of zmm0-15; zmm16-31 and the
mask registers are not used).

Usage: gen_sha512_amd64.py OUTPUT  (or `meson compile -C BUILD regen-asm-sha512`);
       gen_sha512_amd64.py --check FILE  exits 1 if FILE differs from the output.
"""
import sys

HEADER = """\
/* SPDX-License-Identifier: MIT */
/* Generated by crypto/asm/gen/gen_sha512_amd64.py; do not edit. Regenerate
 * with `meson compile -C <build> regen-asm-sha512`. The contract and the
 * method are in the generator's docstring and in crypto/sha512.h. Intel
 * syntax: destination first; rorx d, s, n computes d = s rotated right by
 * n; andn d, s1, s2 computes d = ~s1 & s2; vprorq d, s, n rotates each
 * 64-bit word of s right by n; vpternlogq d, s1, s2, 0x96 computes
 * d = d ^ s1 ^ s2. */
#include "../asm.h"

\t.intel_syntax noprefix
"""

# The two block functions: the name, the prefix of its local labels, and
# whether its schedule steps use AVX-512VL (VPRORQ, VPTERNLOGQ on ymm).
VARIANTS = [
    ("sha512_blocks_avx2", ".Lsha512_", False),
    ("sha512_blocks_avx512", ".Lsha512x_", True),
]

# FIPS 180-4 section 4.2.3 (the same table as sha512_K in crypto/sha512.c)
K = [
    0x428a2f98d728ae22, 0x7137449123ef65cd, 0xb5c0fbcfec4d3b2f, 0xe9b5dba58189dbbc,
    0x3956c25bf348b538, 0x59f111f1b605d019, 0x923f82a4af194f9b, 0xab1c5ed5da6d8118,
    0xd807aa98a3030242, 0x12835b0145706fbe, 0x243185be4ee4b28c, 0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f, 0x80deb1fe3b1696b1, 0x9bdc06a725c71235, 0xc19bf174cf692694,
    0xe49b69c19ef14ad2, 0xefbe4786384f25e3, 0x0fc19dc68b8cd5b5, 0x240ca1cc77ac9c65,
    0x2de92c6f592b0275, 0x4a7484aa6ea6e483, 0x5cb0a9dcbd41fbd4, 0x76f988da831153b5,
    0x983e5152ee66dfab, 0xa831c66d2db43210, 0xb00327c898fb213f, 0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2, 0xd5a79147930aa725, 0x06ca6351e003826f, 0x142929670a0e6e70,
    0x27b70a8546d22ffc, 0x2e1b21385c26c926, 0x4d2c6dfc5ac42aed, 0x53380d139d95b3df,
    0x650a73548baf63de, 0x766a0abb3c77b2a8, 0x81c2c92e47edaee6, 0x92722c851482353b,
    0xa2bfe8a14cf10364, 0xa81a664bbc423001, 0xc24b8b70d0f89791, 0xc76c51a30654be30,
    0xd192e819d6ef5218, 0xd69906245565a910, 0xf40e35855771202a, 0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8, 0x1e376c085141ab53, 0x2748774cdf8eeb99, 0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63, 0x4ed8aa4ae3418acb, 0x5b9cca4f7763e373, 0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc, 0x78a5636f43172f60, 0x84c87814a1f0ab72, 0x8cc702081a6439ec,
    0x90befffa23631e28, 0xa4506cebde82bde9, 0xbef9a3f7b2c67915, 0xc67178f2e372532b,
    0xca273eceea26619c, 0xd186b8c721c0c207, 0xeada7dd6cde0eb1e, 0xf57d4f7fee6ed178,
    0x06f067aa72176fba, 0x0a637dc5a2c898a6, 0x113f9804bef90dae, 0x1b710b35131c471b,
    0x28db77f523047d84, 0x32caab7b40c72493, 0x3c9ebe0a15c9bebc, 0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6, 0x597f299cfc657e2a, 0x5fcb6fab3ad6faec, 0x6c44198c4a475817,
]

# Registers. The eight working variables a..h as they stand at the start of
# a block; four more for the rounds: bc = b ^ c (carried from round to
# round) and three temporaries, whose roles rotate (rnd); three cursors:
# rbp reads W + K for the rounds (lane 0 or 1 folded into it), rdi writes
# the schedule's W + K and rsi reads the K pairs (during the next pair's
# loads, rdi and rsi point at its two blocks). The arguments go to the stack.
VARS = ["rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11"]
ROUND_REGS = ["r12", "r13", "r14", "r15"]  # bc, x, y, z at round 0
CALLEE_SAVED = ["rbx", "rbp", "r12", "r13", "r14", "r15"]
WKP, WP, KP = "rbp", "rdi", "rsi"
CFA_OFF = 8 * (1 + len(CALLEE_SAVED))  # the CFA above the pushes

# Stack frame (rsp aligned to 32 after the pushes): the caller's rsp after
# the pushes, the blocks left (counting the pair in flight), the input
# pointer (its block A), the state pointer, then W + K (40 entries of 32
# bytes: words 2j, 2j+1 of A, then of B).
SAVED_RSP = 0
LEFT = 8
INP = 16
STATEP = 24
WK = 32
WK_BYTES = 32 * 40
FRAME = WK + WK_BYTES

# Vector registers: the schedule ring X[j mod 8], four temporaries, and the
# byte shuffle for ROTR 8.
XR = ["ymm%d" % i for i in range(8)]
VT = ["ymm8", "ymm9", "ymm10", "ymm11"]
ROT8 = "ymm12"


class Out:
    def __init__(self):
        self.lines = []
        self.name, self.prefix, self.avx512 = VARIANTS[0]

    def lab(self, name):
        """The local label name of the function being written."""
        return self.prefix + name

    def ins(self, op, *args, comment=None):
        self.lines.append(fmt(op, args, comment))

    def note(self, text):
        self.lines.append("\t/* " + text + " */")

    def label(self, name, align=False):
        """A label; align: at the start of a 64-byte line (loop heads)."""
        if align:
            self.lines.append("\t.p2align\t6")
        self.lines.append(name + ":")

    def blank(self):
        self.lines.append("")


def fmt(op, args, comment=None):
    text = "\t" + op + ("\t" + ", ".join(args) if args else "")
    if comment:
        text = text.ljust(47) + " /* " + comment + " */"
    return text


def wk(k, lane, word):
    """W + K of words 2k + word (word 0 or 1) of block lane (0: A, 1: B),
    k counted from the W + K cursor."""
    return "qword ptr [%s + %d]" % (WKP, 32 * k + 16 * lane + 8 * word)


def rnd(t, v, regs, lane, k, word):
    """One round (FIPS 180-4 6.4.2 step 3) of block lane, t its name in the
    comments: v = the registers of a..h as they stand, regs = (bc, x, y, z)
    with bc = b ^ c; W + K at word `word` of cursor entry k. 22 ALU
    instructions (the two MOVs are renames).
    Afterwards the register of h holds the new a, that of d the new e, and
    z holds a ^ b, the next round's b ^ c: the next round's regs are
    (z, x, y, bc)."""
    a, b, c, d, e, f, g, h = v
    bc, x, y, z = regs
    # The order: mostly the e side (S1, Ch, T1) first, the a side (Maj, S0)
    # after, each instruction after what it depends on. It came out of a
    # search over random orders that respect the dependencies, timed on
    # Zen 4 (EPYC 9004) against the previous order (itself the winner of
    # such a search on Zen 3): 3 % faster on long messages there, as fast
    # on one block (docs/performance.md, 2026-12-04). The out-of-order core
    # makes the order matter a little: the round is bound by its 22 ALU
    # instructions on four ALUs, and the order decides how often one on
    # the critical path (e to the new e, five deep) waits behind others.
    return [
        ("add", (h, wk(k, lane, word)), "round %s: h + W_t + K_t" % t),
        ("rorx", (y, e, "18"), "ROTR18(e)"),
        ("rorx", (x, e, "14"), "ROTR14(e)"),
        ("andn", (z, e, g), "~e & g"),
        ("lea", (h, "[%s + %s]" % (h, z)), None),
        ("xor", (x, y), None),
        ("mov", (z, f), None),
        ("rorx", (y, e, "41"), "ROTR41(e)"),
        ("and", (z, e), "e & f"),
        ("xor", (x, y), "S1(e)"),
        ("lea", (h, "[%s + %s]" % (h, z)), "h + W + K + Ch(e, f, g); Ch = (e & f) + (~e & g)"),
        ("mov", (z, a), None),
        ("xor", (z, b), "a ^ b"),
        ("lea", (h, "[%s + %s]" % (h, x)), "T1"),
        ("rorx", (x, a, "28"), "ROTR28(a)"),
        ("and", (bc, z), "(b ^ c) & (a ^ b)"),
        ("rorx", (y, a, "34"), "ROTR34(a)"),
        ("xor", (bc, b), "Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b"),
        ("xor", (x, y), None),
        ("lea", (d, "[%s + %s]" % (d, h)), "d + T1: the new e"),
        ("lea", (h, "[%s + %s]" % (h, bc)), "T1 + Maj"),
        ("rorx", (y, a, "39"), "ROTR39(a)"),
        ("xor", (x, y), "S0(a)"),
        ("lea", (h, "[%s + %s]" % (h, x)), "T1 + T2: the new a"),
    ]


def rotate(v):
    """The variables after a round: (a..h) <- (T1 + T2, a, b, c, d + T1, e, f, g)."""
    return [v[7]] + v[:7]


def sigma(src, terms, spare, avx512, name):
    """Vector instructions leaving in VT[2] the XOR of terms of src, each
    ("rot", n) for ROTR n or ("shr", n) for SHR n, in that order; spare (a
    register free from here, possibly src itself once read) holds the shift
    on AVX-512. AVX2: ROTR n = SHR n ^ SHL (64 - n), ROTR 8 a byte shuffle;
    AVX-512VL: VPRORQ, and VPTERNLOGQ 0x96 XORs the three terms."""
    s, u = VT[2], VT[3]
    if avx512:
        rots = [n for kind, n in terms if kind == "rot"]
        shr = [n for kind, n in terms if kind == "shr"]
        assert len(rots) == 2 and len(shr) == 1
        return [
            ("vprorq", (s, src, str(rots[0])), "ROTR%d" % rots[0]),
            ("vprorq", (u, src, str(rots[1])), "ROTR%d" % rots[1]),
            ("vpsrlq", (spare, src, str(shr[0])), "SHR%d" % shr[0]),
            ("vpternlogq", (s, u, spare, "0x96"), name),
        ]
    out = []
    for i, (kind, n) in enumerate(terms):
        last = name if i == len(terms) - 1 else None
        if kind == "rot" and n == 8:
            parts = [("vpshufb", (u, src, ROT8), "ROTR8")]
        elif kind == "rot":
            parts = [("vpsrlq", (u, src, str(n)), None), ("vpsllq", (u, src, str(64 - n)), None)]
        else:
            parts = [("vpsrlq", (u, src, str(n)), None)]
        for q, (op, args, comment) in enumerate(parts):
            if i == 0 and q == 0:
                out.append((op, (s,) + args[1:], comment))  # the first part straight into s
                continue
            out.append((op, args, comment))
            done = q == len(parts) - 1
            out.append(("vpxor", (s, s, u), last if done and last else
                        ("ROTR%d" % n if done and kind == "rot" and n != 8 else None)))
    return out


def sched_step(j, k, wp, kp, avx512):
    """Vector step j (8 <= j < 40, X[j] at cursor entry k, k >= 8): X[j]
    from X[j-8] .. X[j-1], then W + K.
      W_t = s1(W_t-2) + W_t-7 + s0(W_t-15) + W_t-16, t = 2j, 2j+1:
      { W_t-16, W_t-15 } = X[j-8]; { W_t-15, W_t-14 } = X[j-8]:X[j-7] moved
      by one word (VPALIGNR: within each 128-bit lane, i.e. each block);
      { W_t-7, W_t-6 } = X[j-4]:X[j-3] moved by one word; { W_t-2, W_t-1 } = X[j-1].
      s0(x) = ROTR1 ^ ROTR8 ^ SHR7, s1(x) = ROTR19 ^ ROTR61 ^ SHR6 (sigma):
      23 instructions with AVX2, 15 with AVX-512VL."""
    xj = XR[j % 8]          # X[j] replaces X[j-8]
    x7, x4, x3, x1 = XR[(j - 7) % 8], XR[(j - 4) % 8], XR[(j - 3) % 8], XR[(j - 1) % 8]
    w15, w7, s, u = VT
    return [
        ("vpalignr", (w15, x7, xj, "8"), "step j = %d mod 8: { W_t-15, W_t-14 }, t = 2j" % (j % 8)),
        ("vpalignr", (w7, x3, x4, "8"), "{ W_t-7, W_t-6 }"),
        ("vpaddq", (xj, xj, w7), "W_t-16 + W_t-7"),
    ] + sigma(w15, [("rot", 1), ("shr", 7), ("rot", 8)], w15, avx512, "s0(W_t-15)") + [
        ("vpaddq", (xj, xj, s), None),
    ] + sigma(x1, [("rot", 19), ("rot", 61), ("shr", 6)], w7, avx512, "s1(W_t-2)") + [
        ("vpaddq", (xj, xj, s), "X[j] = { W_t, W_t+1 | W_t, W_t+1 }"),
        ("vpaddq", (w15, xj, "ymmword ptr [%s + %d]" % (kp, 32 * k)), "+ K"),
        ("vmovdqa", ("ymmword ptr [%s + %d]" % (wp, 32 * k), w15), "W + K"),
    ]


def spread(scalar_rounds, vector):
    """Spread the vector instructions evenly over the rounds and among the
    scalar instructions of each (the out-of-order core reorders them
    anyway; this keeps both kinds in every decode group)."""
    n = sum(len(r) for r in scalar_rounds)
    m = len(vector)
    out, si, vi = [], 0, 0
    for r in scalar_rounds:
        for ins in r:
            out.append(ins)
            si += 1
            while vi < m and (vi + 1) * n <= si * m:
                out.append(vector[vi])
                vi += 1
    out.extend(vector[vi:])
    return out


def emit(o, lst):
    for op, args, comment in lst:
        o.ins(op, *args, comment=comment)


def rounds_list(n, t0, lane, vector=()):
    """Rounds t0 .. t0+n-1 (n a multiple of 8; t0 a number, or a format
    for the comments of a body that runs at several t0) of block lane, from W + K
    cursor entries 0 .. n/2-1, with the vector instructions spread over
    them. The variables and the round registers end where they started
    (n = 8 m: the names come back; n even: the roles of bc and z swap
    every round)."""
    v = list(VARS)
    regs = list(ROUND_REGS)
    lst = []
    for i in range(n):
        name = str(t0 + i) if isinstance(t0, int) else t0 % i
        lst.append(rnd(name, v, regs, lane, i // 2, i % 2))
        v = rotate(v)
        regs = [regs[3], regs[1], regs[2], regs[0]]
    assert v == VARS and regs == ROUND_REGS
    return spread(lst, list(vector))


def load_list(ina, inb):
    """X[0..7] of the blocks at ina (low lanes) and inb (high lanes),
    big-endian words, and their W + K into entries 0..7 (rsp-relative)."""
    bswap = VT[3]
    lst = [("vmovdqa", (bswap, "ymmword ptr [rip + .Lsha512_bswap]"), "next pair: X[0..7]")]
    for j in range(8):
        xj = XR[j]
        lst += [
            ("vmovdqu", ("xmm%d" % j, "xmmword ptr [%s + %d]" % (ina, 16 * j)), "A: W_%d, W_%d" % (2 * j, 2 * j + 1)),
            ("vinserti128", (xj, xj, "xmmword ptr [%s + %d]" % (inb, 16 * j), "1"), "B: W_%d, W_%d" % (2 * j, 2 * j + 1)),
            ("vpshufb", (xj, xj, bswap), None),
            ("vpaddq", (VT[j % 3], xj, "ymmword ptr [rip + .Lsha512_k2 + %d]" % (32 * j)), "+ K"),
            ("vmovdqa", ("ymmword ptr [rsp + %d]" % (WK + 32 * j), VT[j % 3]), None),
        ]
    return lst


def block_end(o):
    """state += a..h (the state pointer on the stack), and a..h = the new
    state (the next block's start)."""
    sp = ROUND_REGS[1]
    o.note("state += a..h; the registers keep the sum (the next block's start)")
    o.ins("mov", sp, "qword ptr [rsp + %d]" % STATEP)
    for i in range(8):
        o.ins("add", VARS[i], "qword ptr [%s + %d]" % (sp, 8 * i))
        o.ins("mov", "qword ptr [%s + %d]" % (sp, 8 * i), VARS[i])


def prologue(o):
    o.lines.append("SIGIL_FUNC(%s)" % o.name)
    o.ins("test", "rdx, rdx")
    o.ins("jz", o.lab("ret"), comment="nblocks = 0 (public)")
    for r in CALLEE_SAVED:
        o.ins("push", r)
        o.ins(".cfi_adjust_cfa_offset", "8")
        o.ins(".cfi_rel_offset", r, "0")
    o.ins("mov", "rax, rsp")
    o.ins("sub", "rsp, %d" % FRAME)
    o.ins("and", "rsp, -32", comment="W + K aligned to 32")
    o.ins("mov", "qword ptr [rsp + %d], rax" % SAVED_RSP)
    # DW_CFA_def_cfa_expression: CFA = *(rsp + SAVED_RSP) + CFA_OFF
    o.ins(".cfi_escape", "0x0f, 0x05, 0x77, 0x%02x, 0x06, 0x23, 0x%02x" % (SAVED_RSP, CFA_OFF),
          comment="CFA = [rsp + %d] + %d" % (SAVED_RSP, CFA_OFF))
    o.ins("mov", "qword ptr [rsp + %d], rdx" % LEFT, comment="blocks left")
    o.ins("mov", "qword ptr [rsp + %d], rsi" % INP, comment="input")
    o.ins("mov", "qword ptr [rsp + %d], rdi" % STATEP, comment="state")


def epilogue(o):
    o.label(o.lab("done"))
    o.note("wipe W + K (derived from the message) and every vector register")
    o.ins("vpxor", "xmm0, xmm0, xmm0")
    for j in range(40):
        o.ins("vmovdqa", "ymmword ptr [rsp + %d]" % (WK + 32 * j), "ymm0")
    o.ins("vzeroall")
    o.ins("mov", "rsp, qword ptr [rsp + %d]" % SAVED_RSP)
    o.ins(".cfi_def_cfa", "rsp, %d" % CFA_OFF)
    for r in reversed(CALLEE_SAVED):
        o.ins("pop", r)
        o.ins(".cfi_adjust_cfa_offset", "-8")
        o.ins(".cfi_restore", r)
    o.label(o.lab("ret"))
    o.ins("ret")
    o.lines.append("SIGIL_ENDFUNC(%s)" % o.name)
    o.blank()


def steps(first, wp, kp, avx512):
    """Schedule steps first .. first+7 (W + K entry first + s at wp + 32 s,
    its K pair at kp + 32 s)."""
    vec = []
    for s_ in range(8):
        vec += sched_step(first + s_, s_, wp, kp, avx512)
    return vec


def gen(o):
    x = ROUND_REGS[1]
    P = WKP
    o.note("void %s(uint64_t state[8], const uint8_t *in, size_t nblocks);" % o.name)
    o.note("rdi = state, rsi = in, rdx = nblocks")
    prologue(o)
    if not o.avx512:
        o.ins("vmovdqa", ROT8, "ymmword ptr [rip + .Lsha512_rot8]")
    for i in range(8):
        o.ins("mov", VARS[i], "qword ptr [rdi + %d]" % (8 * i))
    o.blank()
    o.note("the first pair: X[0..7], then block A's rounds 0..63 with all of the pair's")
    o.note("steps 8..39, one beside every two rounds (nothing earlier to hide them behind)")
    o.ins("lea", "rdi, [rsi + 128]")
    o.ins("cmp", "qword ptr [rsp + %d], 1" % LEFT)
    o.ins("cmove", "rdi, rsi", comment="one block: B = A (public)")
    emit(o, load_list("rsi", "rdi"))
    o.ins("lea", P, "[rsp + %d]" % WK)
    o.ins("lea", KP, "[rip + .Lsha512_k2]")
    o.ins("mov", ROUND_REGS[0], VARS[1])
    o.ins("xor", ROUND_REGS[0], VARS[2], comment="b ^ c")
    o.label(o.lab("first"), True)
    vec = []
    for k in range(8, 16):
        vec += sched_step(k, k, P, KP, o.avx512)
    emit(o, rounds_list(16, "16 i + %d", 0, vec))
    o.ins("add", P, "256")
    o.ins("add", KP, "256")
    o.ins("lea", x, "[rip + .Lsha512_k2 + %d]" % (32 * 32))
    o.ins("cmp", KP, x)
    o.ins("jne", o.lab("first"), comment="4 times (public)")
    o.ins("jmp", o.lab("plain"), comment="A's rounds 64..79")
    o.blank()
    o.note("32 rounds with 8 schedule steps: B's rounds 48..79 (the next pair's steps 16..23),")
    o.note("A's rounds 0..31 and 32..63 (steps 24..31, 32..39); rbp reads W + K (lane 0 or 1),")
    o.note("rdi writes it, rsi reads the K pairs; rsi tells which of the three this was")
    o.label(o.lab("body"), True)
    emit(o, rounds_list(32, "t0 + %d", 0, steps(8, WP, KP, o.avx512)))
    o.ins("add", P, "512")
    o.ins("add", WP, "256")
    o.ins("add", KP, "256")
    o.ins("lea", x, "[rip + .Lsha512_k2 + %d]" % (32 * 24))
    o.ins("cmp", KP, x)
    o.ins("jne", o.lab("not_b"), comment="(public)")
    o.note("end of block B")
    block_end(o)
    o.ins("add", "qword ptr [rsp + %d], 256" % INP)
    o.ins("sub", "qword ptr [rsp + %d], 2" % LEFT)
    o.ins("jz", o.lab("done"), comment="no blocks left (public)")
    o.label(o.lab("start_a"))
    o.note("block A: rbp = lane 0 of W + K entry 0")
    o.ins("lea", P, "[rsp + %d]" % WK)
    o.ins("mov", ROUND_REGS[0], VARS[1])
    o.ins("xor", ROUND_REGS[0], VARS[2], comment="b ^ c")
    o.ins("jmp", o.lab("body"))
    o.label(o.lab("not_b"))
    o.ins("lea", x, "[rip + .Lsha512_k2 + %d]" % (32 * 40))
    o.ins("cmp", KP, x)
    o.ins("jne", o.lab("body"), comment="A's rounds 32..63 next (public)")
    o.blank()
    o.note("16 rounds without schedule: A's rounds 64..79, then B's rounds 0..15")
    o.label(o.lab("plain"), True)
    emit(o, rounds_list(16, "t0 + %d", 0))
    o.ins("add", P, "256")
    o.ins("lea", x, "[rsp + %d]" % (WK + WK_BYTES))
    o.ins("cmp", P, x)
    o.ins("jne", o.lab("b16"), comment="(public)")
    o.note("end of block A")
    block_end(o)
    o.ins("cmp", "qword ptr [rsp + %d], 1" % LEFT)
    o.ins("je", o.lab("done"), comment="a lone last block (public)")
    o.note("block B: rbp = lane 1 of W + K entry 0")
    o.ins("lea", P, "[rsp + %d]" % (WK + 16))
    o.ins("mov", ROUND_REGS[0], VARS[1])
    o.ins("xor", ROUND_REGS[0], VARS[2], comment="b ^ c")
    o.ins("jmp", o.lab("plain"))
    o.blank()
    o.note("B's rounds 16..47: the next pair's X[0..7] (rdi = its A, rsi = its B), then its steps 8..15;")
    o.note("or, for the last pair, on to " + o.lab("last_b"))
    o.label(o.lab("b16"))
    o.ins("cmp", "qword ptr [rsp + %d], 2" % LEFT)
    o.ins("je", o.lab("last_b"), comment="no next pair (public)")
    o.ins("mov", x, "qword ptr [rsp + %d]" % INP)
    o.ins("lea", "rdi", "[%s + 256]" % x)
    o.ins("lea", "rsi", "[%s + 384]" % x)
    o.ins("cmp", "qword ptr [rsp + %d], 3" % LEFT)
    o.ins("cmove", "rsi", "rdi", comment="three left: the next is a lone block, B = A (public)")
    o.note("rounds 16..23, with the loads")
    emit(o, rounds_list(8, 16, 0, load_list("rdi", "rsi")))
    o.ins("add", P, "128")
    o.ins("lea", WP, "[rsp + %d]" % (WK + 256))
    o.ins("lea", KP, "[rip + .Lsha512_k2 + 256]")
    o.note("rounds 24..47, with the steps 8..15")
    emit(o, rounds_list(24, 24, 0, steps(8, WP, KP, o.avx512)))
    o.ins("add", P, "384")
    o.ins("add", WP, "256")
    o.ins("add", KP, "256")
    o.ins("jmp", o.lab("body"))
    o.blank()
    o.note("the last pair's B: its rounds 16..79 by 16 without schedule work")
    o.label(o.lab("last_b"))
    o.ins("lea", x, "[rsp + %d]" % (WK + WK_BYTES + 16))
    o.ins("cmp", P, x)
    o.ins("jne", o.lab("plain"), comment="(public)")
    block_end(o)
    o.ins("jmp", o.lab("done"))
    o.blank()
    epilogue(o)


def gen_data(o):
    o.ins(".section", ".rodata")
    o.ins(".balign", "64")
    o.note("{ K_2j, K_2j+1, K_2j, K_2j+1 }: one pair per 128-bit lane (FIPS 180-4 4.2.3)")
    o.label(".Lsha512_k2")
    for j in range(40):
        pair = ["0x%016x" % K[2 * j], "0x%016x" % K[2 * j + 1]]
        o.ins(".quad", *(pair + pair))
    o.note("reverse the bytes of each 64-bit word (the message words are big-endian)")
    o.label(".Lsha512_bswap")
    o.ins(".byte", ", ".join(str(i) for i in [7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8] * 2))
    o.note("ROTR 8 of each 64-bit word: byte i of the result is byte i + 1 (mod 8)")
    o.label(".Lsha512_rot8")
    o.ins(".byte", ", ".join(str(i) for i in [1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8] * 2))
    o.ins(".text")


def generate():
    o = Out()
    for v in VARIANTS:
        o.name, o.prefix, o.avx512 = v
        gen(o)
    gen_data(o)
    return HEADER + "\n" + "\n".join(o.lines) + "\nSIGIL_ASM_NOTES\n"


def main():
    args = sys.argv[1:]
    text = generate()
    if len(args) == 2 and args[0] == "--check":
        with open(args[1]) as f:
            if f.read() != text:
                sys.stderr.write("%s differs from the generator's output: "
                                 "run `meson compile -C <build> regen-asm-sha512`\n" % args[1])
                return 1
        return 0
    if len(args) != 1:
        sys.stderr.write("usage: gen_sha512_amd64.py OUTPUT | --check FILE\n")
        return 2
    with open(args[0], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
