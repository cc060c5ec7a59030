#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mutate.py - mutation testing of sigil's crypto/ against the crypto test suite.

Each mutant in tests/mutants/mutants.txt is a textual patch of one file in
crypto/: an exact piece of the real code and what it becomes. The script

  1. copies the source tree to a scratch directory (default
     /tmp/sigil-mutants; never touches the tree it was started from),
  2. builds the copy once (debugoptimized: the bound assertions are on;
     -Dasm=disabled unless --asm says otherwise) and runs the fast suite
     `meson test --suite crypto` unmutated: it must pass,
  3. for each mutant: applies the patch to the copy, rebuilds (incrementally),
     runs `meson test --suite crypto --maxfail 1`, restores the file, and
     prints KILLED (a test failed or timed out), SURVIVED (every test passed)
     or STILLBORN (the mutant does not compile: not counted),
  4. with --ct, mutants tagged "ct" (a secret-dependent branch or index that
     computes the same values) are also run under ctgrind
     (tests/ct/run-ctgrind.sh) in a second copy built with --buildtype=release
     -Dct_validation=true and the same -Dasm: KILLED when Valgrind reports
     an error (the crypto suite cannot kill those; ctgrind must),
  5. prints the totals and the total runtime.

Usage: tests/mutants/mutate.py [--src DIR] [--work DIR] [--only ID,ID] [--check]
                               [--ct] [--list] [--timeout S]
                               [--asm disabled|enabled|auto]
  --check  only verify that every mutant's text matches the real code once.
  --asm    the -Dasm= of the mutant trees; default disabled. On a CPU with
           MULX/ADX (amd64) an assembly build runs the fe64 assembly for
           X25519 and the power chains, so the C paths of crypto/fe.c,
           fe_pow.c, ge.c and the radix-2^51 ladder (x25519_ladder51) run
           only with -Dasm=disabled: with the assembly, their mutants can
           survive. The other way round, the fe64 C twins and the ladder64
           (mutants A01-A08 in fe64.c/fe64.h, X12, X13: tag asm) are
           checked by the crypto suite only where the assembly is built
           (tests/asm): with --asm=disabled those run in a second copy
           built with -Dasm=auto (killable on an amd64 MULX/ADX machine).
Exit status: 0 when no non-equivalent mutant survived (mutants tagged
"equivalent" are expected to survive; docs/constant-time.md explains each),
1 otherwise, 2 on a setup error.

mutants.txt format (one block per mutant):
  @@ ID FILE [tags]
  # description (one or more lines)
  - old line(s), exactly as in FILE (after "- ")
  + new line(s) (after "+ "; none = delete)
Tags: nth=N (the old text occurs several times: patch the N-th, 1-based),
all (patch every occurrence), ct (killed by ctgrind, not by the crypto
suite), equivalent (expected to survive; explained in docs/constant-time.md),
asm (code the crypto suite checks only in a build with the assembly: with
--asm=disabled such a mutant runs in a second copy built with -Dasm=auto).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.dirname(os.path.dirname(HERE))

# meson.build files removed from the copy: everything the crypto and ct
# suites do not need, so that a half-written daemon (or a new test
# directory) cannot stop the run. Test directories kept: KEEP_TESTS.
PRUNE = ['packaging/meson.build', 'daemon/meson.build', 'client/meson.build',
         'proto/meson.build']
KEEP_TESTS = {'harness', 'crypto', 'ct', 'asm'}


class Mutant:
    def __init__(self, mid, path, tags, lineno):
        self.id = mid
        self.path = path
        self.tags = tags
        self.lineno = lineno
        self.desc = []
        self.old = []
        self.new = []

    @property
    def description(self):
        return ' '.join(self.desc)

    def has(self, tag):
        return tag in self.tags


def parse(listfile):
    mutants = []
    cur = None
    with open(listfile, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if line.startswith('@@ '):
                parts = line[3:].split()
                if len(parts) < 2:
                    sys.exit(f'{listfile}:{n}: "@@ ID FILE [tags]" expected')
                cur = Mutant(parts[0], parts[1], parts[2:], n)
                mutants.append(cur)
            elif cur is None:
                continue  # the header of the file
            elif line.startswith('# '):
                cur.desc.append(line[2:])
            elif line.startswith('- ') or line == '-':
                cur.old.append(line[2:])
            elif line.startswith('+ ') or line == '+':
                cur.new.append(line[2:])
            elif line.strip() == '':
                continue
            else:
                sys.exit(f'{listfile}:{n}: line must start with "@@ ", "# ", "- " or "+ "')
    ids = [m.id for m in mutants]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        sys.exit(f'{listfile}: duplicate mutant ids {sorted(dup)}')
    for m in mutants:
        if not m.old:
            sys.exit(f'{listfile}:{m.lineno}: mutant {m.id} has no "- " lines')
        if not m.desc:
            sys.exit(f'{listfile}:{m.lineno}: mutant {m.id} has no description')
        if m.old == m.new:
            sys.exit(f'{listfile}:{m.lineno}: mutant {m.id} changes nothing')
    return mutants


def patched(m, text):
    """The text of m.path with m applied; raises ValueError if it does not match."""
    old = '\n'.join(m.old)
    new = '\n'.join(m.new)
    count = text.count(old)
    nth = [t for t in m.tags if t.startswith('nth=')]
    if count == 0:
        raise ValueError(f'{m.id}: text not found in {m.path}:\n    ' + old.replace('\n', '\n    '))
    if m.has('all'):
        return text.replace(old, new)
    if nth:
        k = int(nth[0][4:])
        if k < 1 or k > count:
            raise ValueError(f'{m.id}: nth={k} but the text occurs {count} times in {m.path}')
        pos = -1
        for _ in range(k):
            pos = text.index(old, pos + 1)
        return text[:pos] + new + text[pos + len(old):]
    if count != 1:
        raise ValueError(f'{m.id}: text occurs {count} times in {m.path}; add nth=N or all')
    return text.replace(old, new)


def check_all(mutants, src):
    bad = 0
    for m in mutants:
        p = os.path.join(src, m.path)
        try:
            with open(p, encoding='utf-8') as f:
                patched(m, f.read())
        except (OSError, ValueError) as e:
            print(f'MISMATCH {e}')
            bad += 1
    return bad


def copy_tree(src, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)

    def ignore(d, names):
        rel = os.path.relpath(d, src)
        out = set()
        for nm in names:
            if rel == '.' and (nm.startswith('build') or nm == '.git'):
                out.add(nm)
        return out
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)
    prune = list(PRUNE)
    tests = os.path.join(dst, 'tests')
    if os.path.isdir(tests):
        prune += [os.path.join('tests', d, 'meson.build') for d in os.listdir(tests)
                  if d not in KEEP_TESTS]
    for p in prune:
        q = os.path.join(dst, p)
        if os.path.exists(q):
            os.remove(q)


def run(cmd, timeout=None, cwd=None, env=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return r.returncode, r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors='replace') if isinstance(e.stdout, bytes) else (e.stdout or '')
        return None, out


def first_failure(out):
    """The name of the first failed test in meson test output."""
    pat = re.compile(r'^\s*\d+/\d+\s+(.*?)\s+(FAIL|TIMEOUT|ERROR)\s')
    for line in out.splitlines():
        mo = pat.match(line)
        if mo:
            return f'{mo.group(2)}: {mo.group(1)}'[:70]
    return 'tests failed'


class Tree:
    """A scratch copy of the source tree with one build directory."""

    def __init__(self, src, root, options, suite, timeout):
        # a fresh build directory every time: copytree keeps the sources'
        # mtimes, so objects left by an earlier run (the last mutant of that
        # run) could look newer than the copied sources and never rebuild
        if os.path.exists(root):
            shutil.rmtree(root)
        self.src = os.path.join(root, 'src')
        self.build = os.path.join(root, 'build')
        self.suite = suite
        self.timeout = timeout
        copy_tree(src, self.src)
        rc, out = run(['meson', 'setup', self.build] + options, cwd=self.src)
        if rc != 0:
            print(out[-4000:])
            sys.exit(f'mutate.py: meson setup failed in {self.src}')
        self.env = dict(os.environ, MESON_TESTTHREADS=os.environ.get('MESON_TESTTHREADS', '2'))

    def compile(self):
        if self.suite == 'ct':
            return run(['ninja', '-C', self.build, 'tests/ct/ctgrind'], timeout=600)
        return run(['ninja', '-C', self.build], timeout=600)

    def test(self, maxfail=True, timeout=None):
        if self.suite == 'ct':
            # the verdict of Valgrind alone: a ct mutant computes the right
            # values, so it is killed exactly when Memcheck reports an error
            rc, out = run([os.path.join(self.src, 'tests/ct/run-ctgrind.sh'),
                           os.path.join(self.build, 'tests/ct/ctgrind')],
                          timeout=timeout or self.timeout)
            if rc is None:
                return None, out
            if re.search(r'^ok \d+ - valgrind: 0 errors', out, re.M):
                return 0, out
            return 1, out
        cmd = ['meson', 'test', '-C', self.build, '--no-rebuild', '--suite', self.suite,
               '--print-errorlogs']
        if maxfail:
            cmd += ['--maxfail', '1']
        return run(cmd, timeout=timeout or self.timeout, env=self.env)

    def apply(self, m):
        p = os.path.join(self.src, m.path)
        with open(p, encoding='utf-8') as f:
            orig = f.read()
        with open(p, 'w', encoding='utf-8') as f:
            f.write(patched(m, orig))
        return orig

    def restore(self, m, orig):
        p = os.path.join(self.src, m.path)
        with open(p, 'w', encoding='utf-8') as f:
            f.write(orig)
        # a new mtime, so that ninja rebuilds even if the mutant was stillborn
        os.utime(p, None)

    def baseline(self):
        rc, out = self.compile()
        if rc != 0:
            print(out[-4000:])
            sys.exit(f'mutate.py: the unmutated copy does not build ({self.build})')
        t0 = time.monotonic()
        rc, out = self.test(maxfail=False, timeout=1800)
        dt = time.monotonic() - t0
        if rc != 0:
            print(out[-6000:])
            what = 'ctgrind reports errors' if self.suite == 'ct' else f'suite {self.suite} FAILS'
            sys.exit(f'mutate.py: {what} on the unmutated tree: fix that first')
        return dt

    def try_mutant(self, m):
        """('KILLED'|'SURVIVED'|'STILLBORN', detail)"""
        orig = self.apply(m)
        try:
            rc, out = self.compile()
            if rc != 0:
                err = [ln for ln in out.splitlines() if 'error:' in ln]
                return 'STILLBORN', (err[0] if err else 'build failed')[:100]
            rc, out = self.test()
            if rc is None:
                return 'KILLED', 'timeout'
            if rc != 0:
                if self.suite == 'ct':
                    mo = re.search(r'valgrind: (\d+) errors', out)
                    where = re.search(r'^# ==\d+==    (?:at|by) 0x[0-9A-F]+: (\w+)', out, re.M)
                    return 'KILLED', (f'{mo.group(1) if mo else "?"} Memcheck errors'
                                      + (f', first in {where.group(1)}' if where else ''))
                return 'KILLED', first_failure(out)
            return 'SURVIVED', 'every test passed'
        finally:
            self.restore(m, orig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--asm', choices=['disabled', 'enabled', 'auto'], default='disabled',
                    help='meson -Dasm= of the mutant trees (default: disabled, so that the C '
                         'paths of fe.c, fe_pow.c, ge.c and x25519_ladder51 run even on a '
                         'MULX/ADX CPU; then the mutants tagged asm, the fe64 ones A01-A08, '
                         'X12, X13, run in a second copy built with -Dasm=auto)')
    ap.add_argument('--src', default=DEFAULT_SRC)
    ap.add_argument('--work', default='/tmp/sigil-mutants')
    ap.add_argument('--list-file', default=os.path.join(HERE, 'mutants.txt'))
    ap.add_argument('--only', default='')
    ap.add_argument('--check', action='store_true')
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--ct', action='store_true')
    ap.add_argument('--timeout', type=float, default=0,
                    help='per-mutant test timeout in s (default: 3x the baseline, >= 60)')
    a = ap.parse_args()

    src = os.path.abspath(a.src)
    work = os.path.abspath(a.work)
    if work == src or work.startswith(src + os.sep):
        sys.exit('mutate.py: --work must be outside the source tree')
    mutants = parse(a.list_file)
    if a.only:
        want = set(a.only.split(','))
        mutants = [m for m in mutants if m.id in want]
        if len(mutants) != len(want):
            sys.exit(f'mutate.py: unknown ids in --only: {sorted(want - {m.id for m in mutants})}')
    if a.list:
        for m in mutants:
            print(f'{m.id:5} {m.path:18} {",".join(m.tags):12} {m.description}')
        return 0
    bad = check_all(mutants, src)
    print(f'mutate.py: {len(mutants)} mutants, {bad} do not match the code in {src}')
    if bad:
        return 2
    if a.check:
        return 0

    t_start = time.monotonic()
    asm_opt = f'-Dasm={a.asm}'
    print(f'mutate.py: copying {src} to {work} and building (debugoptimized, {asm_opt})...', flush=True)
    tree = Tree(src, os.path.join(work, 'crypto'), ['--buildtype=debugoptimized', asm_opt], 'crypto', 0)
    base = tree.baseline()
    tree.timeout = a.timeout or max(60.0, 3 * base)
    print(f'mutate.py: baseline suite crypto passes in {base:.1f} s; per-mutant timeout {tree.timeout:.0f} s',
          flush=True)
    # mutants tagged "asm" (the fe64 C twins and ladder64) are checked by the
    # crypto suite only where the assembly is built: with the default
    # --asm=disabled they run in a second copy built with -Dasm=auto
    asmtree = None
    if a.asm == 'disabled' and any(m.has('asm') for m in mutants):
        print('mutate.py: building a second copy with -Dasm=auto for the mutants tagged asm...', flush=True)
        asmtree = Tree(src, os.path.join(work, 'crypto-asm'), ['--buildtype=debugoptimized', '-Dasm=auto'],
                       'crypto', 0)
        asmbase = asmtree.baseline()
        asmtree.timeout = a.timeout or max(60.0, 3 * asmbase)
        print(f'mutate.py: baseline suite crypto (-Dasm=auto) passes in {asmbase:.1f} s', flush=True)
    cttree = None
    if a.ct and any(m.has('ct') for m in mutants):
        cttree = Tree(src, os.path.join(work, 'ct'),
                      ['--buildtype=release', '-Dct_validation=true', asm_opt], 'ct', 600)
        ctbase = cttree.baseline()
        print(f'mutate.py: baseline suite ct passes in {ctbase:.1f} s', flush=True)

    counts = {'KILLED': 0, 'SURVIVED': 0, 'STILLBORN': 0}
    unexpected = []
    results = []
    for m in mutants:
        t0 = time.monotonic()
        if asmtree is not None and m.has('asm'):
            verdict, detail = asmtree.try_mutant(m)
            detail = '-Dasm=auto: ' + detail
        else:
            verdict, detail = tree.try_mutant(m)
        if m.has('ct') and verdict == 'SURVIVED':
            if cttree is None:
                detail = 'crypto suite passes (ct mutant: run with --ct for ctgrind)'
            else:
                verdict, detail = cttree.try_mutant(m)
                detail = 'ctgrind: ' + detail
        dt = time.monotonic() - t0
        counts[verdict] += 1
        note = ''
        if verdict == 'SURVIVED' and m.has('equivalent'):
            note = ' (equivalent: expected)'
        elif verdict == 'SURVIVED' and not (m.has('ct') and cttree is None):
            unexpected.append(m)
        elif verdict == 'KILLED' and m.has('equivalent'):
            note = ' (marked equivalent but killed: fix the list)'
        print(f'{m.id:5} {verdict:9} {dt:6.1f}s  {m.path}: {m.description}  [{detail}]{note}',
              flush=True)
        results.append((m, verdict, detail))
    total = time.monotonic() - t_start
    print(f'mutate.py: {len(mutants)} mutants: {counts["KILLED"]} killed, {counts["SURVIVED"]} survived '
          f'({sum(1 for m, v, _ in results if v == "SURVIVED" and m.has("equivalent"))} marked equivalent), '
          f'{counts["STILLBORN"]} stillborn; total runtime {total:.0f} s')
    if unexpected:
        print('mutate.py: UNEXPECTED SURVIVORS: ' + ', '.join(m.id for m in unexpected))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
