# SPDX-License-Identifier: MIT
"""formulas.py - the X25519 ladder step (crypto/fe64/fe64.h) and the ge64 point
routines (crypto/fe64/ge64.h) as sequences of field operations, one list for
every architecture: gen_fe64_amd64.py and gen_fe64_arm64.py turn each into
assembly with their own registers and operation bodies.

LADDER_FIELDS: struct fe64_ladder, fifteen fe64 of 32 bytes, in order.
LADDER_STEP: one step after the conditional swap, as
fe64_ladder_step_generic: (comment, op, destination, sources...), op one of
add, sub, sq, mul, mul121666.

routines(suffix, regs) yields, per routine, the arguments of the
generators' gen_ge(): name, prototype comment, arguments (register, type,
name), temporaries, and the operations (comment, op, destination,
sources...). suffix names the routines (ge64_madd_<suffix>); regs are the
three registers that hold r, p and q at the routine's entry.
"""

LADDER_FIELDS = ["x1", "x2", "z2", "x3", "z3", "a", "b", "c", "d", "aa", "bb", "e",
                 "da", "cb", "t"]

LADDER_STEP = [
    ("A = x2 + z2", "add", "a", "x2", "z2"),
    ("B = x2 - z2", "sub", "b", "x2", "z2"),
    ("C = x3 + z3", "add", "c", "x3", "z3"),
    ("D = x3 - z3", "sub", "d", "x3", "z3"),
    ("AA = A^2", "sq", "aa", "a"),
    ("BB = B^2", "sq", "bb", "b"),
    ("DA = D A", "mul", "da", "d", "a"),
    ("CB = C B", "mul", "cb", "c", "b"),
    ("E = AA - BB", "sub", "e", "aa", "bb"),
    ("t = DA + CB", "add", "t", "da", "cb"),
    ("x3 = (DA + CB)^2", "sq", "x3", "t"),
    ("t = DA - CB", "sub", "t", "da", "cb"),
    ("t = (DA - CB)^2", "sq", "t", "t"),
    ("z3 = x1 (DA - CB)^2", "mul", "z3", "t", "x1"),
    ("x2 = AA BB", "mul", "x2", "aa", "bb"),
    ("t = 121666 E", "mul121666", "t", "e"),
    ("t = BB + 121666 E = AA + 121665 E", "add", "t", "bb", "t"),
    ("z2 = E (AA + a24 E)", "mul", "z2", "t", "e"),
]


def routines(suffix, regs):
    r0, r1, r2 = regs
    yield ("ge64_p1p1_to_p2_" + suffix,
           "void ge64_p1p1_to_p2_%s(ge64_p2 *r, const ge64_p1p1 *p); r != p" % suffix,
           [(r0, "p2", "r"), (r1, "p1p1", "p")], [],
           [("X = X T", "mul", "r.X", "p.X", "p.T"),
            ("Y = Y Z", "mul", "r.Y", "p.Y", "p.Z"),
            ("Z = Z T", "mul", "r.Z", "p.Z", "p.T")])
    yield ("ge64_p1p1_to_p3_" + suffix,
           "void ge64_p1p1_to_p3_%s(ge64_p3 *r, const ge64_p1p1 *p); r != p" % suffix,
           [(r0, "p3", "r"), (r1, "p1p1", "p")], [],
           [("X = X T", "mul", "r.X", "p.X", "p.T"),
            ("Y = Y Z", "mul", "r.Y", "p.Y", "p.Z"),
            ("Z = Z T", "mul", "r.Z", "p.Z", "p.T"),
            ("T = X Y", "mul", "r.T", "p.X", "p.Y")])
    yield ("ge64_p2_dbl_" + suffix,
           "void ge64_p2_dbl_%s(ge64_p1p1 *r, const ge64_p2 *p); r != p (a p3 is a p2)" % suffix,
           [(r0, "p1p1", "r"), (r1, "p2", "p")], ["a", "b", "c", "xy"],
           [("a = X^2", "sq", "a", "p.X"),
            ("b = Y^2", "sq", "b", "p.Y"),
            ("c = Z^2", "sq", "c", "p.Z"),
            ("c = 2 Z^2", "add", "c", "c", "c"),
            ("xy = X + Y", "add", "xy", "p.X", "p.Y"),
            ("xy = (X + Y)^2", "sq", "xy", "xy"),
            ("r.Y = b + a", "add", "r.Y", "b", "a"),
            ("r.Z = b - a", "sub", "r.Z", "b", "a"),
            ("r.X = (X + Y)^2 - (b + a)", "sub", "r.X", "xy", "r.Y"),
            ("r.T = 2 Z^2 - (b - a)", "sub", "r.T", "c", "r.Z")])
    # madd/msub (q a precomputed affine point) and add/sub (q cached)
    for kind in ("precomp", "cached"):
        for sign in ("add", "sub"):
            zop, top = ("add", "sub") if sign == "add" else ("sub", "add")
            if kind == "precomp":
                name = "ge64_m%s_%s" % (sign, suffix)
                m1, m2 = ("yminusx", "yplusx") if sign == "add" else ("yplusx", "yminusx")
                cd = [("c = q.xy2d T", "mul", "c", "q.xy2d", "p.T"),
                      ("d = 2 Z", "add", "d", "p.Z", "p.Z")]
            else:
                name = "ge64_%s_%s" % (sign, suffix)
                m1, m2 = ("YminusX", "YplusX") if sign == "add" else ("YplusX", "YminusX")
                cd = [("c = q.T2d T", "mul", "c", "q.T2d", "p.T"),
                      ("d = q.Z Z", "mul", "d", "q.Z", "p.Z"),
                      ("d = 2 q.Z Z", "add", "d", "d", "d")]
            yield (name,
                   "void %s(ge64_p1p1 *r, const ge64_p3 *p, const ge64_%s *q); r != p" % (name, kind),
                   [(r0, "p1p1", "r"), (r1, "p3", "p"), (r2, kind, "q")],
                   ["ypx", "ymx", "a", "b", "c", "d"],
                   [("ypx = Y + X", "add", "ypx", "p.Y", "p.X"),
                    ("ymx = Y - X", "sub", "ymx", "p.Y", "p.X"),
                    ("a = ymx q.%s" % m1, "mul", "a", "ymx", "q." + m1),
                    ("b = ypx q.%s" % m2, "mul", "b", "ypx", "q." + m2)] + cd +
                   [("r.X = b - a", "sub", "r.X", "b", "a"),
                    ("r.Y = b + a", "add", "r.Y", "b", "a"),
                    ("r.Z = d %s c" % ("+" if zop == "add" else "-"), zop, "r.Z", "d", "c"),
                    ("r.T = d %s c" % ("+" if top == "add" else "-"), top, "r.T", "d", "c")])
