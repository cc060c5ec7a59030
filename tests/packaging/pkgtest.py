# SPDX-License-Identifier: MIT
"""pkgtest - shared helpers of the packaging tests: TAP output, paths from
the meson environment, and a `meson install` into a temporary DESTDIR."""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile


class Tap:
    """Minimal TAP producer; the plan is printed at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, diag=None):
        self.n += 1
        if not cond:
            self.failed += 1
        print(('ok' if cond else 'not ok') + ' %d - %s' % (self.n, name))
        if diag and not cond:
            self.diag(diag)
        sys.stdout.flush()
        return cond

    def diag(self, text):
        for line in str(text).rstrip('\n').split('\n'):
            print('# ' + line)
        sys.stdout.flush()

    def bail(self, why):
        print('Bail out! ' + why)
        sys.exit(1)

    def done(self):
        print('1..%d' % self.n)
        sys.exit(1 if self.failed or self.n == 0 else 0)


_scratch = []


def _cleanup():
    if os.environ.get('SIGIL_KEEP_TMP'):
        for d in _scratch:
            print('# kept ' + d)
        return
    for d in _scratch:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def scratch(prefix):
    """A temporary directory removed at exit (kept if SIGIL_KEEP_TMP is set)."""
    d = tempfile.mkdtemp(prefix=prefix)
    _scratch.append(d)
    return d


def env(name):
    """A variable set by packaging/meson.build; missing means misuse."""
    v = os.environ.get(name)
    if v is None:
        print('Bail out! %s is not set: run this through meson test' % name)
        sys.exit(1)
    return v


def run(cmd, **kw):
    """Run cmd, capture text output; never raises on a non-zero status."""
    kw.setdefault('stdout', subprocess.PIPE)
    kw.setdefault('stderr', subprocess.PIPE)
    kw.setdefault('text', True)
    return subprocess.run(cmd, **kw)


def need_tool(tap, tool):
    """A missing tool is a failure, never a skip."""
    path = shutil.which(tool) if not os.path.isabs(tool) else tool
    if not path or not os.access(path, os.X_OK):
        tap.bail('required tool %s not found (see .ci/run for packages)' % tool)
    return path


def under(root, path):
    """path (absolute, as installed) inside root."""
    return os.path.join(root, path.lstrip('/'))


def install_tree(tap, keep=False):
    """meson install the build into a fresh temporary DESTDIR; return it."""
    build = env('SIGIL_BUILD_ROOT')
    dest = scratch('sigil-destdir-')
    r = run(['meson', 'install', '-C', build, '--no-rebuild', '--quiet',
             '--destdir', dest])
    if not tap.ok(r.returncode == 0, 'meson install --destdir succeeds',
                  r.stdout + r.stderr):
        tap.bail('no install tree')
    return dest


def lib_env(dest, extra=None):
    """Environment that runs installed programs against the DESTDIR libs."""
    e = dict(os.environ)
    e['LD_LIBRARY_PATH'] = under(dest, env('SIGIL_LIBDIR'))
    if extra:
        e.update(extra)
    return e
