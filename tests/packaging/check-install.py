#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-install - `meson install --destdir` and the tree it makes.

Checks that the binaries, libraries, headers, pkg-config files, units, man
pages and bash completions are where the configured directories say; that
installed programs run from the tree and carry no build-tree RUNPATH; that the
shared libraries export only public names; that the man pages render without
a groff warning; that the completions load in bash; and builds tiny programs
against each installed .pc file (PKG_CONFIG_SYSROOT_DIR into the DESTDIR),
one of them statically, and runs them - the libsigil one against the
installed sigild.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgtest import scratch, Tap, env, run, need_tool, under, install_tree, lib_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def expected_files():
    """(installed path, kind) for everything the tree must hold."""
    lib = env('SIGIL_LIBDIR')
    inc = env('SIGIL_INCLUDEDIR')
    man = env('SIGIL_MANDIR')
    comp = env('SIGIL_COMPLETIONSDIR')
    files = [
        (env('SIGIL_SIGILD'), 'exe'),
        (os.path.join(env('SIGIL_BINDIR'), 'sigil'), 'exe'),
        (os.path.join(lib, 'libsigil-crypto.so.0'), 'lib'),
        (os.path.join(lib, 'libsigil-crypto.so'), 'lib'),
        (os.path.join(lib, 'libsigil-crypto.a'), 'file'),
        (os.path.join(lib, 'libsigil.so.0'), 'lib'),
        (os.path.join(lib, 'libsigil.so'), 'lib'),
        (os.path.join(lib, 'pkcs11/sigil-pkcs11.so'), 'lib'),
        (os.path.join(env('SIGIL_DATADIR'), 'p11-kit/modules/sigil.module'), 'file'),
        (os.path.join(inc, 'sigil/crypto.h'), 'file'),
        (os.path.join(inc, 'sigil/client.h'), 'file'),
        (os.path.join(lib, 'pkgconfig/sigil-crypto.pc'), 'file'),
        (os.path.join(lib, 'pkgconfig/sigil.pc'), 'file'),
        (os.path.join(env('SIGIL_UNITDIR'), 'sigild.service'), 'file'),
        (os.path.join(env('SIGIL_UNITDIR'), 'sigild.socket'), 'file'),
        (os.path.join(env('SIGIL_UNITDIR'), 'sigild-ssh-agent.socket'), 'file'),
        (os.path.join(env('SIGIL_USERUNITDIR'), 'sigild.service'), 'file'),
        (os.path.join(env('SIGIL_USERUNITDIR'), 'sigild.socket'), 'file'),
        (os.path.join(env('SIGIL_USERUNITDIR'), 'sigild-ssh-agent.socket'), 'file'),
        (os.path.join(env('SIGIL_SYSUSERSDIR'), 'sigil.conf'), 'file'),
        (os.path.join(env('SIGIL_TMPFILESDIR'), 'sigil.conf'), 'file'),
        (os.path.join(env('SIGIL_SYSCONFDIR'), 'sigil/sigil.conf'), 'file'),
        (os.path.join(man, 'man8/sigild.8'), 'man'),
        (os.path.join(man, 'man1/sigil.1'), 'man'),
        (os.path.join(man, 'man5/sigil.conf.5'), 'man'),
        (os.path.join(comp, 'sigil'), 'bash'),
        (os.path.join(comp, 'sigild'), 'bash'),
    ]
    return files


def check_tree(tap, dest):
    for path, kind in expected_files():
        p = under(dest, path)
        if not tap.ok(os.path.isfile(p), 'installed: %s' % path):
            continue
        if kind == 'exe':
            tap.ok(os.access(p, os.X_OK), 'executable: %s' % path)
        elif kind == 'man':
            head = open(p, errors='replace').read(4096)
            tap.ok('.TH' in head, '%s is roff with a .TH header' % path)
            r = run(['groff', '-man', '-Tutf8', '-ww', '-z', p])
            tap.ok(r.returncode == 0 and r.stderr == '', '%s renders without groff warnings' % path,
                   r.stderr)
        elif kind == 'bash':
            cmd = os.path.basename(path)
            r = run(['bash', '-c', 'source "$1" && complete -p "$2"', 'bash', p, cmd])
            tap.ok(r.returncode == 0 and ('complete -F' in r.stdout and r.stdout.rstrip().endswith(cmd)),
                   'bash completion for %s loads and registers' % cmd, r.stdout + r.stderr)
    # Nothing installed that points back into the build tree.
    build = env('SIGIL_BUILD_ROOT')
    bad = []
    for root, _dirs, files in os.walk(dest):
        for f in files:
            p = os.path.join(root, f)
            if os.path.islink(p) or not open(p, 'rb').read(4) == b'\x7fELF':
                continue
            r = run(['readelf', '-d', p])
            for line in r.stdout.splitlines():
                if ('RUNPATH' in line or 'RPATH' in line) and build in line:
                    bad.append('%s: %s' % (p, line.strip()))
    tap.ok(not bad, 'no installed ELF file has a RUNPATH into the build tree', '\n'.join(bad))


def complete(dest, words):
    """COMPREPLY of the installed completion for the command line words
    (the last one is being completed), with the installed programs on PATH."""
    comp = under(dest, env('SIGIL_COMPLETIONSDIR'))
    script = ('source "%s/sigil"; source "%s/sigild"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              '_${1}; printf "%%s\\n" "${COMPREPLY[@]}"') % (comp, comp)
    e = lib_env(dest, {'PATH': under(dest, env('SIGIL_BINDIR')) + ':' + os.environ.get('PATH', ''),
                       'SIGIL_SOCK': '/nonexistent/sigild.sock'})
    r = run(['bash', '-c', script, 'bash'] + words, env=e)
    return r.stdout.split()


def check_completion(tap, dest):
    cases = [
        (['sigil', 'si'], {'sign'}, 'a command'),
        (['sigil', 'sign', '--format', ''], {'sshsig', 'minisign', 'signify', 'raw', 'hex', 'base64'},
         'sign --format values'),
        (['sigil', 'pubkey', '--format', 'al'], {'allowed-signers'}, 'pubkey --format values'),
        (['sigil', 'sign', '--na'], {'--namespace'}, "options from the installed sigil's sign --help"),
        (['sigil', 'verify', '--pol'], {'--policy'}, "options from the installed sigil's verify --help"),
        (['sigild', '--st'], {'--state-dir'}, 'sigild options'),
    ]
    for words, want, what in cases:
        got = set(complete(dest, words))
        tap.ok(got == want, 'bash completion: %s (%s)' % (what, ' '.join(words)), 'got %s' % sorted(got))


def check_exports(tap, dest):
    lib = under(dest, env('SIGIL_LIBDIR'))
    for name, prefix in (('libsigil-crypto.so.0', 'sigil_'), ('libsigil.so.0', 'sigil_client_'),
                         ('pkcs11/sigil-pkcs11.so', 'C_')):
        p = os.path.join(lib, name)
        r = run(['nm', '-D', '--defined-only', p])
        syms = [line.split()[-1] for line in r.stdout.splitlines()
                if len(line.split()) == 3 and line.split()[1] in 'TDBRVWi']
        other = [s for s in syms if not s.startswith(prefix)]
        tap.ok(r.returncode == 0 and syms and not other,
               '%s exports only %s* (%d symbols)' % (name, prefix, len(syms)),
               r.stderr + 'unexpected: %s' % other)


def check_programs(tap, dest):
    e = lib_env(dest)
    r = run([under(dest, env('SIGIL_SIGILD')), '--version'], env=e)
    want = 'sigild %s' % env('SIGIL_VERSION')
    tap.ok(r.returncode == 0 and r.stdout.strip() == want,
           'installed sigild --version prints "%s"' % want, r.stdout + r.stderr)
    r = run([under(dest, os.path.join(env('SIGIL_BINDIR'), 'sigil')), '--help'], env=e)
    tap.ok(r.returncode == 0 and 'sign' in r.stdout + r.stderr,
           'installed sigil --help runs', r.stdout + r.stderr)
    # The binaries must find the installed libsigil, not a build-tree copy.
    r = run(['ldd', under(dest, os.path.join(env('SIGIL_BINDIR'), 'sigil'))], env=e)
    m = re.search(r'libsigil\.so\.0 => (\S+)', r.stdout)
    tap.ok(m is not None and m.group(1).startswith(under(dest, env('SIGIL_LIBDIR'))),
           'sigil resolves libsigil.so.0 inside the install tree', r.stdout)


def pkgconfig_env(dest):
    e = dict(os.environ)
    e['PKG_CONFIG_PATH'] = under(dest, os.path.join(env('SIGIL_LIBDIR'), 'pkgconfig'))
    e['PKG_CONFIG_SYSROOT_DIR'] = dest
    e.pop('PKG_CONFIG_LIBDIR', None)
    return e


def pkgconfig(tap, e, *args):
    r = run(['pkg-config'] + list(args), env=e)
    if not tap.ok(r.returncode == 0, 'pkg-config %s' % ' '.join(args), r.stderr):
        return None
    return shlex.split(r.stdout)


def start_sigild(tap, dest, top):
    sockpath = os.path.join(top, 'run', 'sigild.sock')
    state = os.path.join(top, 'state')
    os.mkdir(os.path.join(top, 'run'), 0o700)
    os.mkdir(state, 0o700)
    cmd = [under(dest, env('SIGIL_SIGILD')), '--socket', sockpath, '--state-dir', state,
           '--foreground', '--workers', '1']
    if os.geteuid() != 0:
        cmd.append('--allow-unlocked-memory')
    log = open(os.path.join(top, 'sigild.log'), 'w+')
    p = subprocess.Popen(cmd, env=lib_env(dest), stdout=log, stderr=log)
    end = time.monotonic() + 20
    while time.monotonic() < end and p.poll() is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sockpath)
            s.close()
            return p, sockpath, log
        except OSError:
            time.sleep(0.1)
        finally:
            s.close()
    log.seek(0)
    tap.ok(False, 'installed sigild listens on %s' % sockpath, log.read())
    if p.poll() is None:
        p.kill()
        p.wait()
    return None, None, log


def check_pkgconfig(tap, dest):
    cc = shlex.split(env('SIGIL_CC'))
    e = pkgconfig_env(dest)
    top = scratch('sigil-pc-')
    for pc in ('sigil-crypto', 'sigil'):
        pcfile = under(dest, os.path.join(env('SIGIL_LIBDIR'), 'pkgconfig', pc + '.pc'))
        r = run(['pkg-config', '--validate', pcfile], env=e)
        tap.ok(r.returncode == 0 and r.stderr == '', 'pkg-config --validate %s.pc' % pc, r.stderr)
        r = run(['pkg-config', '--modversion', pc], env=e)
        tap.ok(r.stdout.strip() == env('SIGIL_VERSION'), '%s.pc has version %s' % (pc, env('SIGIL_VERSION')),
               r.stdout + r.stderr)

    # sigil-crypto, shared
    flags = pkgconfig(tap, e, '--cflags', '--libs', 'sigil-crypto')
    if flags is not None:
        tap.ok(any(f.startswith('-I' + dest) for f in flags) and any(f.startswith('-L' + dest) for f in flags),
               'sigil-crypto.pc flags point into the DESTDIR', flags)
        exe = os.path.join(top, 'prog-crypto')
        r = run(cc + ['-std=c11', '-Wall', '-Werror', '-o', exe, os.path.join(HERE, 'prog-crypto.c')] + flags)
        if tap.ok(r.returncode == 0, 'prog-crypto.c compiles and links with sigil-crypto.pc', r.stdout + r.stderr):
            r = run([exe], env=lib_env(dest))
            tap.ok(r.returncode == 0, 'prog-crypto (shared) matches RFC 8032 and RFC 7748', r.stdout + r.stderr)
            r = run(['ldd', exe], env=lib_env(dest))
            tap.ok(under(dest, env('SIGIL_LIBDIR')) + '/libsigil-crypto.so.0' in r.stdout,
                   'prog-crypto uses the installed libsigil-crypto.so.0', r.stdout)

    # sigil-crypto, static: the archive from libsigil-crypto-dev
    flags = pkgconfig(tap, e, '--cflags', '--libs', '--static', 'sigil-crypto')
    if flags is not None:
        exe = os.path.join(top, 'prog-crypto-static')
        libs = [f for f in flags if not f.startswith('-l')]
        libs += ['-Wl,-Bstatic', '-lsigil-crypto', '-Wl,-Bdynamic']
        libs += [f for f in flags if f.startswith('-l') and f != '-lsigil-crypto']
        r = run(cc + ['-std=c11', '-Wall', '-Werror', '-o', exe, os.path.join(HERE, 'prog-crypto.c')] + libs)
        if tap.ok(r.returncode == 0, 'prog-crypto.c links statically with libsigil-crypto.a', r.stdout + r.stderr):
            e2 = dict(os.environ)
            e2.pop('LD_LIBRARY_PATH', None)
            r = run([exe], env=e2)
            tap.ok(r.returncode == 0, 'prog-crypto (static, no LD_LIBRARY_PATH) matches the RFCs',
                   r.stdout + r.stderr)

    # sigil (libsigil) + sigil-crypto against the installed daemon
    flags = pkgconfig(tap, e, '--cflags', '--libs', 'sigil', 'sigil-crypto')
    if flags is None:
        return
    exe = os.path.join(top, 'prog-client')
    r = run(cc + ['-std=c11', '-Wall', '-Werror', '-o', exe, os.path.join(HERE, 'prog-client.c')] + flags)
    if not tap.ok(r.returncode == 0, 'prog-client.c compiles and links with sigil.pc and sigil-crypto.pc',
                  r.stdout + r.stderr):
        return
    p, sockpath, log = start_sigild(tap, dest, top)
    if p is None:
        return
    try:
        r = run([exe, sockpath, 'pkgtest-rfc8032'], env=lib_env(dest), timeout=60)
        tap.ok(r.returncode == 0, 'prog-client: import, sign (RFC 8032 TEST 1), verify, delete via the '
               'installed sigild and libsigil', r.stdout + r.stderr)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        log.seek(0)
        tap.ok(rc == 0, 'installed sigild exits 0 on SIGTERM', log.read()[-2000:])


def main():
    tap = Tap()
    for tool in ('meson', 'pkg-config', 'groff', 'bash', 'readelf', 'nm', 'ldd'):
        need_tool(tap, tool)
    dest = install_tree(tap)
    tap.diag('DESTDIR ' + dest)
    check_tree(tap, dest)
    check_completion(tap, dest)
    check_exports(tap, dest)
    check_programs(tap, dest)
    check_pkgconfig(tap, dest)
    tap.done()


if __name__ == '__main__':
    main()
