#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-docs - the man pages and completions keep up with the programs.

Every long option that `sigild --help` prints is in sigild(8) and in the
sigild completion; every command of `sigil --help` is in sigil(1) and in the
sigil completion, and every long option of `sigil COMMAND --help` is in
sigil(1); every key the configuration parser (daemon/config.c) accepts is in
sigil.conf(5) and in sigil.conf.example, and sigild starts with that example.
The programs are the ones just built.
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgtest import Tap, env, run  # noqa: E402


def longopts(text):
    return set(re.findall(r'(?<![\w-])--[a-z][a-z0-9-]*', text))


def has(text, opt):
    """opt appears as a whole option (not as the start of a longer one)."""
    return re.search(re.escape(opt) + r'(?![a-z0-9-])', text) is not None


def main():
    tap = Tap()
    src = env('SIGIL_SOURCE_ROOT')
    build = env('SIGIL_BUILD_ROOT')
    man = {n: open(os.path.join(src, 'docs/man', n)).read()
           for n in ('sigild.8.scd', 'sigil.1.scd', 'sigil.conf.5.scd')}
    comp = {n: open(os.path.join(src, 'packaging/completions', n)).read()
            for n in ('sigil.bash', 'sigild.bash')}

    r = run([os.path.join(build, 'daemon/sigild'), '--help'])
    opts = longopts(r.stdout)
    tap.ok(r.returncode == 0 and '--socket' in opts, 'sigild --help lists its options', r.stdout + r.stderr)
    missing = sorted(o for o in opts if not has(man['sigild.8.scd'], o))
    tap.ok(not missing, 'sigild(8) documents every option of sigild --help', 'missing: %s' % missing)
    missing = sorted(o for o in opts if not has(comp['sigild.bash'], o))
    tap.ok(not missing, 'the sigild completion knows every option', 'missing: %s' % missing)

    sigil = os.path.join(build, 'client/sigil')
    r = run([sigil, '--help'])
    m = re.search(r'^Commands:\n((?:  \S+\n)+)', r.stdout, re.M)
    cmds = m.group(1).split() if m else []
    tap.ok(r.returncode == 0 and len(cmds) >= 5, 'sigil --help lists its commands', r.stdout + r.stderr)
    missing = sorted(c for c in cmds if not re.search(r'^\*%s\*' % re.escape(c), man['sigil.1.scd'], re.M)
                     and not re.search(r'^\*[a-z]+\*, \*%s\*' % re.escape(c), man['sigil.1.scd'], re.M))
    tap.ok(not missing, 'sigil(1) has an entry for every command', 'missing: %s' % missing)
    words = re.search(r"local commands='([^']*)'", comp['sigil.bash'])
    missing = sorted(set(cmds) - set(words.group(1).split() if words else []))
    tap.ok(not missing, 'the sigil completion knows every command', 'missing: %s' % missing)
    glob_opts = longopts(r.stdout)
    for c in cmds:
        r = run([sigil, c, '--help'])
        opts = longopts(r.stdout) | glob_opts
        missing = sorted(o for o in opts if not has(man['sigil.1.scd'], o))
        tap.ok(r.returncode == 0 and not missing, 'sigil(1) documents every option of sigil %s --help' % c,
               'exit %d, missing: %s' % (r.returncode, missing))

    cfg = open(os.path.join(src, 'daemon/config.c')).read()
    keys = set(re.findall(r'NUM\("([a-z_]+)"', cfg)) | set(re.findall(r'strcmp\(k, "([a-z_]+)"\)', cfg))
    tap.ok(len(keys) >= 5, 'the keys of daemon/config.c are found (%d)' % len(keys), sorted(keys))
    missing = sorted(k for k in keys if not re.search(r'^\*%s\* =' % re.escape(k), man['sigil.conf.5.scd'], re.M))
    tap.ok(not missing, 'sigil.conf(5) documents every configuration key', 'missing: %s' % missing)
    example = os.path.join(src, 'packaging/sigil.conf.example')
    text = open(example).read()
    missing = sorted(k for k in keys if not re.search(r'^#?%s =' % re.escape(k), text, re.M))
    tap.ok(not missing, 'sigil.conf.example lists every configuration key', 'missing: %s' % missing)
    ok, log = starts_with_config(os.path.join(build, 'daemon/sigild'), example)
    tap.ok(ok, 'sigild starts with sigil.conf.example as its configuration', log)
    tap.done()


def starts_with_config(sigild, config):
    """Start sigild on a temporary socket and state directory with config;
    True when it reports listening (then SIGTERM), with its stderr."""
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.Popen([sigild, '--foreground', '--config', config, '--socket', os.path.join(d, 's.sock'),
                              '--state-dir', os.path.join(d, 'state')],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        log = []
        ok = False
        for line in p.stderr:
            log.append(line)
            if ' listening on ' in line:
                ok = True
                break
        p.terminate()
        _, rest = p.communicate(timeout=30)
        return ok and p.returncode == 0, ''.join(log) + rest


if __name__ == '__main__':
    main()
