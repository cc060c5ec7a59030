#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""objbodies.py OBJDUMP ARCHIVE [--intel] [--format NAME] FUNC... - the
instructions of the named functions in the object code of ARCHIVE, as
`OBJDUMP -d --no-show-raw-insn` (with `-M intel` under --intel) prints
them: the one reader of objdump's output for the object-code checks
(check-asm.sh, check-asm-arm64.sh, check-sha512-asm.sh, check-ifma-ct.py).

Prints one line per instruction, in each function's order and in the order
the functions were named:

    FUNC<TAB>ADDRESS<TAB>INSTRUCTION

ADDRESS is hex as objdump prints it (section-relative in an archive);
INSTRUCTION has objdump's trailing comment removed ("# ..." in Intel syntax,
"// ..." on AArch64, where "#" starts an immediate). --format NAME fails
unless objdump reads ARCHIVE as that file format (elf64-littleaarch64:
an objdump that cannot read AArch64 would print nothing to check). A
function that is not there has no lines: each check counts its own.
Exit 0, or 1 with a message on standard error (objdump failed, wrong format).

Imported: disassemble(objdump, archive, intel) and bodies(text, funcs, intel).
"""
import re
import subprocess
import sys

HEAD = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s*(.*)$")


def disassemble(objdump, archive, intel):
    """objdump's disassembly of archive (CalledProcessError if it fails)."""
    args = [objdump, "-d", "--no-show-raw-insn"] + (["-M", "intel"] if intel else []) + [archive]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def bodies(text, funcs, intel):
    """{func: [(address, instruction)]} for each of funcs (empty if absent)."""
    comment = re.compile(r"\s+#.*$" if intel else r"\s*//.*$")
    out = {f: [] for f in funcs}
    cur = None
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            cur = m.group(1) if m.group(1) in out else None
            continue
        if not line.strip():
            cur = None
            continue
        m = INSN.match(line)
        if cur is not None and m:
            ins = comment.sub("", m.group(2)).strip()
            if ins:
                out[cur].append((int(m.group(1), 16), ins))
    return out


def main(argv):
    args, intel, fmt = [], False, None
    it = iter(argv[1:])
    for a in it:
        if a == "--intel":
            intel = True
        elif a == "--format":
            fmt = next(it, None)
        else:
            args.append(a)
    if len(args) < 3 or (fmt is not None and not fmt):
        sys.stderr.write("usage: objbodies.py OBJDUMP ARCHIVE [--intel] [--format NAME] FUNC...\n")
        return 1
    objdump, archive, funcs = args[0], args[1], args[2:]
    try:
        text = disassemble(objdump, archive, intel)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.stderr.write("objdump failed on %s: %s\n" % (archive, e))
        return 1
    if fmt and ("file format " + fmt) not in text:
        sys.stderr.write("%s is not %s object code (for %s)\n" % (archive, fmt, objdump))
        return 1
    found = bodies(text, funcs, intel)
    for f in funcs:
        for addr, ins in found[f]:
            print("%s\t%x\t%s" % (f, addr, ins))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
