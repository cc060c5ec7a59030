#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-deb - build the Debian packages and use them.

packaging/build-deb.sh builds sigild, sigil-tools, libsigil0, libsigil-dev,
libsigil-crypto0 and libsigil-crypto-dev (dpkg-buildpackage -us -uc -b,
DEB_BUILD_OPTIONS="nocheck parallel=1": this suite is the check). Then:
- each package holds its files, and the maintainer scripts parse and set up
  the sigil user (systemd-sysusers) and the socket unit;
- apt resolves the packages' dependencies on this machine (simulated);
- dpkg --root installs them into a throwaway root, maintainer scripts
  included (chrootless, DPKG_ROOT): the sigil user, its directories and the
  socket unit link appear there; from that root `sigild --version` runs, the
  installed sigild serves a sign round trip through the installed `sigil`
  command, and a program built against the -dev packages' .pc files signs
  through libsigil and checks RFC 8032; dpkg --purge then cleans up;
- lintian runs on the build; errors fail, warnings are listed.
"""

import glob
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgtest import scratch, Tap, env, run, need_tool  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

PACKAGES = {
    'libsigil-crypto0': [r'usr/lib/[^/]+/libsigil-crypto\.so\.0$'],
    'libsigil-crypto-dev': [r'usr/include/sigil/crypto\.h$', r'usr/lib/[^/]+/libsigil-crypto\.so$',
                            r'usr/lib/[^/]+/libsigil-crypto\.a$',
                            r'usr/lib/[^/]+/pkgconfig/sigil-crypto\.pc$'],
    'libsigil0': [r'usr/lib/[^/]+/libsigil\.so\.0$', r'usr/lib/[^/]+/pkcs11/sigil-pkcs11\.so$',
                  r'usr/share/p11-kit/modules/sigil\.module$'],
    'libsigil-dev': [r'usr/include/sigil/client\.h$', r'usr/lib/[^/]+/libsigil\.so$',
                     r'usr/lib/[^/]+/pkgconfig/sigil\.pc$'],
    'sigild': [r'usr/sbin/sigild$', r'lib/systemd/system/sigild\.service$',
               r'lib/systemd/system/sigild\.socket$', r'usr/lib/systemd/user/sigild\.service$',
               r'usr/lib/systemd/user/sigild\.socket$', r'usr/lib/sysusers\.d/sigil\.conf$',
               r'usr/lib/tmpfiles\.d/sigil\.conf$', r'etc/sigil/sigil\.conf$',
               r'usr/share/man/man8/sigild\.8\.gz$', r'usr/share/man/man5/sigil\.conf\.5\.gz$',
               r'usr/share/bash-completion/completions/sigild$',
               r'usr/share/doc/sigild/examples/master-key\.conf$'],
    'sigil-tools': [r'usr/bin/sigil$', r'usr/bin/age-plugin-sigil$', r'usr/share/man/man1/sigil\.1\.gz$',
                    r'usr/share/bash-completion/completions/sigil$'],
}


def build(tap, out):
    e = dict(os.environ, DEB_BUILD_OPTIONS='nocheck parallel=1')
    script = os.path.join(env('SIGIL_SOURCE_ROOT'), 'packaging', 'build-deb.sh')
    t0 = time.monotonic()
    r = run([script, out], env=e, stderr=subprocess.STDOUT, timeout=800)
    tap.diag('build-deb.sh took %.0f s' % (time.monotonic() - t0))
    if not tap.ok(r.returncode == 0, 'packaging/build-deb.sh builds the packages', r.stdout[-6000:]):
        tap.bail('no packages')
    arch = run(['dpkg', '--print-architecture']).stdout.strip()
    debs = {}
    for name in PACKAGES:
        f = os.path.join(out, '%s_%s_%s.deb' % (name, env('SIGIL_VERSION'), arch))
        if tap.ok(os.path.isfile(f), 'built %s' % os.path.basename(f), '\n'.join(os.listdir(out))):
            debs[name] = f
    return debs


def contents(tap, debs):
    for name, patterns in PACKAGES.items():
        if name not in debs:
            continue
        r = run(['dpkg-deb', '--contents', debs[name]])
        paths = [line.split()[5].lstrip('./') for line in r.stdout.splitlines() if len(line.split()) >= 6]
        for pat in patterns:
            tap.ok(any(re.search(pat, p) for p in paths), '%s contains %s' % (name, pat.rstrip('$')),
                   '\n'.join(paths))


def scripts(tap, debs, top):
    if 'sigild' not in debs:
        return
    d = os.path.join(top, 'control-sigild')
    run(['dpkg-deb', '--control', debs['sigild'], d])
    for s in ('preinst', 'postinst', 'prerm', 'postrm'):
        p = os.path.join(d, s)
        if os.path.exists(p):
            r = run(['sh', '-n', p])
            tap.ok(r.returncode == 0, 'sigild %s parses (sh -n)' % s, r.stderr)
    post = open(os.path.join(d, 'postinst')).read() if os.path.exists(os.path.join(d, 'postinst')) else ''
    tap.ok('systemd-sysusers' in post and 'sigil.conf' in post,
           'sigild postinst creates the sigil user with systemd-sysusers', post)
    tap.ok('systemd-tmpfiles' in post, 'sigild postinst applies tmpfiles.d/sigil.conf', post)
    # tmpfiles.d/sigil.conf names user sigil: sysusers must run first.
    i_users, i_tmp = post.find('systemd-sysusers'), post.find('systemd-tmpfiles')
    i_sock = post.find("'sigild.socket'")
    tap.ok(0 <= i_users < i_tmp and i_users < i_sock,
           'postinst creates the user before tmpfiles and the units use it',
           'sysusers at %d, tmpfiles at %d, socket at %d' % (i_users, i_tmp, i_sock))
    tap.ok(re.search(r'deb-systemd-helper .*sigild\.socket', post) is not None,
           'sigild postinst enables sigild.socket', post)
    tap.ok(re.search(r'--global', post) is None, 'the per-user units are not enabled for every user', post)
    conffiles = open(os.path.join(d, 'conffiles')).read() if os.path.exists(os.path.join(d, 'conffiles')) else ''
    tap.ok('/etc/sigil/sigil.conf' in conffiles, '/etc/sigil/sigil.conf is a conffile', conffiles)
    r = run(['dpkg-deb', '-f', debs.get('sigil-tools', debs['sigild']), 'Depends'])
    tap.ok(re.search(r'libsigil0 \(>= 0\.1\.0\)', r.stdout) is not None,
           'sigil-tools depends on libsigil0 (>= 0.1.0), from its symbols file', r.stdout)
    for lib, soname in (('libsigil0', 'libsigil.so.0'), ('libsigil-crypto0', 'libsigil-crypto.so.0')):
        if lib in debs:
            r = run(['dpkg-deb', '--info', debs[lib], 'symbols'])
            tap.ok(r.returncode == 0 and r.stdout.startswith(soname + ' ' + lib),
                   '%s ships a symbols file for %s' % (lib, soname), r.stdout + r.stderr)


def apt_simulate(tap, debs):
    r = run(['apt-get', '-s', '-q', 'install'] + sorted(debs.values()))
    tap.ok(r.returncode == 0, 'apt-get -s install resolves the dependencies of all six packages',
           r.stdout[-3000:] + r.stderr)


def dpkg_root(root, *args):
    """dpkg on the throwaway root. The maintainer scripts run chrootless
    with DPKG_ROOT set (debhelper's snippets then use --root), so they need
    no shell inside the root; dependencies outside sigil (libc6, libuv1, ...)
    are not in the root's database, hence --force-depends: apt_simulate
    checks them against this machine instead. systemctl and
    deb-systemd-invoke are shims on PATH, so that nothing reaches the host's
    systemd."""
    shims = os.path.join(os.path.dirname(root), 'shims')
    if not os.path.isdir(shims):
        os.mkdir(shims)
        for tool in ('systemctl', 'deb-systemd-invoke'):
            with open(os.path.join(shims, tool), 'w') as f:
                f.write('#!/bin/sh\necho "%s $*" >> "%s"\n' % (tool, os.path.join(shims, 'log')))
            os.chmod(os.path.join(shims, tool), 0o755)
    e = dict(os.environ, PATH=shims + ':' + os.environ.get('PATH', '/usr/bin:/bin'))
    return run(['dpkg', '--root=' + root, '--log=' + os.path.join(root, 'dpkg.log'),
                '--force-script-chrootless', '--force-depends', '--force-not-root'] + list(args),
               env=e, stderr=subprocess.STDOUT)


def install_root(tap, debs, root):
    """dpkg -i the six packages into a throwaway root, scripts included."""
    for d in ('var/lib/dpkg/info', 'var/lib/dpkg/updates', 'var/lib/dpkg/triggers', 'etc'):
        os.makedirs(os.path.join(root, d))
    for f in ('var/lib/dpkg/status', 'var/lib/dpkg/available'):
        open(os.path.join(root, f), 'w').close()
    r = dpkg_root(root, '-i', *sorted(debs.values()))
    tap.ok(r.returncode == 0, 'dpkg --root -i installs the six packages into a throwaway root', r.stdout[-4000:])
    r = run(['dpkg-query', '--admindir=' + os.path.join(root, 'var/lib/dpkg'), '-W',
             '-f=${Package} ${db:Status-Abbrev}\n'] + sorted(debs))
    tap.ok(r.returncode == 0 and all(re.search(r'^%s ii ' % n, r.stdout, re.M) for n in debs),
           'dpkg-query: all six packages are installed (ii)', r.stdout + r.stderr)
    pw = os.path.join(root, 'etc/passwd')
    pwtext = open(pw).read() if os.path.exists(pw) else ''
    m = re.search(r'^sigil:x:(\d+):(\d+):', pwtext, re.M)
    tap.ok(m is not None, 'postinst created user sigil in the root (systemd-sysusers --root)', pwtext)
    for path, mode in (('var/lib/sigil', 0o700), ('run/sigil', 0o750)):
        p = os.path.join(root, path)
        st = os.stat(p) if os.path.isdir(p) else None
        good = st is not None and st.st_mode & 0o7777 == mode
        if good and m and os.geteuid() == 0:
            good = (st.st_uid, st.st_gid) == (int(m.group(1)), int(m.group(2)))
        tap.ok(good, 'postinst created /%s %04o sigil:sigil (systemd-tmpfiles --root)' % (path, mode),
               'stat: %r' % (st,))
    link = os.path.join(root, 'etc/systemd/system/sockets.target.wants/sigild.socket')
    tap.ok(os.path.islink(link) and os.readlink(link).endswith('/systemd/system/sigild.socket'),
           'postinst enabled sigild.socket (sockets.target.wants)', link)
    tap.ok(not os.path.exists(os.path.join(root, 'etc/systemd/system/multi-user.target.wants/sigild.service')),
           'sigild.service itself is not enabled: it starts on demand')
    multiarch = run(['dpkg-architecture', '-qDEB_HOST_MULTIARCH']).stdout.strip()
    libdir = os.path.join(root, 'usr/lib', multiarch)
    e = dict(os.environ, LD_LIBRARY_PATH=libdir)
    return e, libdir


def purge_root(tap, debs, root):
    r = dpkg_root(root, '--purge', *sorted(debs))
    tap.ok(r.returncode == 0, 'dpkg --root --purge removes the six packages', r.stdout[-4000:])
    left = [p for p in ('usr/sbin/sigild', 'usr/bin/sigil', 'etc/sigil/sigil.conf',
                        'etc/systemd/system/sockets.target.wants/sigild.socket')
            if os.path.lexists(os.path.join(root, p))]
    tap.ok(not left, 'purge leaves no binaries, conffiles or unit links behind', left)


def start_sigild(tap, sigild, e, top):
    sockpath = os.path.join(top, 'run', 'sigild.sock')
    os.mkdir(os.path.join(top, 'run'), 0o700)
    os.mkdir(os.path.join(top, 'state'), 0o700)
    cmd = [sigild, '--socket', sockpath, '--state-dir', os.path.join(top, 'state'), '--foreground',
           '--workers', '1']
    if os.geteuid() != 0:
        cmd.append('--allow-unlocked-memory')
    log = open(os.path.join(top, 'sigild.log'), 'w+')
    p = subprocess.Popen(cmd, env=e, stdout=log, stderr=log)
    end = time.monotonic() + 20
    while time.monotonic() < end and p.poll() is None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sockpath)
            return p, sockpath, log
        except OSError:
            time.sleep(0.1)
        finally:
            s.close()
    log.seek(0)
    tap.ok(False, 'the unpacked sigild listens', log.read())
    if p.poll() is None:
        p.kill()
        p.wait()
    return None, None, log


def round_trip(tap, root, e, libdir, top):
    sigild = os.path.join(root, 'usr/sbin/sigild')
    sigil = os.path.join(root, 'usr/bin/sigil')
    r = run([sigild, '--version'], env=e)
    want = 'sigild %s' % env('SIGIL_VERSION')
    tap.ok(r.returncode == 0 and r.stdout.strip() == want, 'unpacked sigild --version prints "%s"' % want,
           r.stdout + r.stderr)
    r = run(['ldd', sigil], env=e)
    m = re.search(r'libsigil\.so\.0 => (\S+)', r.stdout)
    tap.ok(m is not None and m.group(1).startswith(root), 'unpacked sigil uses the unpacked libsigil0', r.stdout)

    # a program built against the -dev packages
    pe = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, 'pkgconfig'), PKG_CONFIG_SYSROOT_DIR=root)
    r = run(['pkg-config', '--cflags', '--libs', 'sigil', 'sigil-crypto'], env=pe)
    prog = None
    if tap.ok(r.returncode == 0, 'pkg-config finds sigil.pc and sigil-crypto.pc from the -dev packages',
              r.stderr):
        prog = os.path.join(top, 'prog-client')
        cc = shlex.split(env('SIGIL_CC'))
        r = run(cc + ['-std=c11', '-Wall', '-Werror', '-o', prog, os.path.join(HERE, 'prog-client.c')]
                + shlex.split(r.stdout))
        if not tap.ok(r.returncode == 0, 'prog-client.c builds against the -dev packages', r.stdout + r.stderr):
            prog = None

    p, sockpath, log = start_sigild(tap, sigild, e, top)
    if p is None:
        return
    try:
        se = dict(e, SIGIL_SOCK=sockpath)
        data = os.path.join(top, 'release.tar')
        with open(data, 'wb') as f:
            f.write(os.urandom(100000))
        r = run([sigil, 'keygen', 'release'], env=se)
        tap.ok(r.returncode == 0, 'sigil keygen release', r.stdout + r.stderr)
        r = run([sigil, 'sign', '--key', 'release', data], env=se)
        sig = data + '.sig'
        tap.ok(r.returncode == 0 and os.path.isfile(sig), 'sigil sign --key release FILE writes FILE.sig',
               r.stdout + r.stderr + '\n' + ' '.join(os.listdir(top)))
        r = run([sigil, 'verify', '--key', 'release', data, sig], env=se)
        tap.ok(r.returncode == 0, 'sigil verify accepts the signature', r.stdout + r.stderr)
        with open(data, 'r+b') as f:
            f.seek(5000)
            b = f.read(1)
            f.seek(5000)
            f.write(bytes([b[0] ^ 1]))
        r = run([sigil, 'verify', '--key', 'release', data, sig], env=se)
        tap.ok(r.returncode == 1, 'sigil verify rejects a tampered file with exit 1',
               'exit %d\n%s%s' % (r.returncode, r.stdout, r.stderr))
        if prog:
            r = run([prog, sockpath, 'debtest-rfc8032'], env=e, timeout=60)
            tap.ok(r.returncode == 0, 'prog-client: RFC 8032 signature through the packaged libsigil and sigild',
                   r.stdout + r.stderr)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        log.seek(0)
        tap.ok(rc == 0, 'unpacked sigild exits 0 on SIGTERM', log.read()[-2000:])


def lintian(tap, out):
    changes = glob.glob(os.path.join(out, '*.changes'))
    if not tap.ok(len(changes) == 1, 'one .changes file', changes):
        return
    r = run(['lintian', '--info', '--display-info', '--pedantic', '--tag-display-limit', '0', changes[0]],
            timeout=600)
    tags = [line for line in r.stdout.splitlines() if re.match(r'^[EWIPX]: ', line)]
    errors = [t for t in tags if t.startswith('E: ')]
    warnings = [t for t in tags if t.startswith('W: ')]
    tap.diag('lintian: %d errors, %d warnings, %d other tags' % (len(errors), len(warnings),
                                                                len(tags) - len(errors) - len(warnings)))
    tap.diag('\n'.join(t for t in tags if not t.startswith('N: ')))
    tap.ok(r.returncode in (0, 1, 2) and 'internal error' not in r.stderr.lower(), 'lintian runs', r.stderr)
    tap.ok(not errors, 'lintian reports no errors', '\n'.join(errors))


def main():
    tap = Tap()
    for tool in ('dpkg-buildpackage', 'dh', 'dpkg-deb', 'dpkg-architecture', 'lintian', 'apt-get',
                 'pkg-config', 'ldd'):
        need_tool(tap, tool)
    top = scratch('sigil-deb-test-')
    out = os.path.join(top, 'out')
    os.mkdir(out)
    debs = build(tap, out)
    contents(tap, debs)
    scripts(tap, debs, top)
    apt_simulate(tap, debs)
    root = os.path.join(top, 'root')
    e, libdir = install_root(tap, debs, root)
    round_trip(tap, root, e, libdir, top)
    purge_root(tap, debs, root)
    lintian(tap, out)
    tap.done()


if __name__ == '__main__':
    main()
