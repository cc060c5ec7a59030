#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-units - the installed systemd units, sysusers.d and tmpfiles.d files.

- `systemd-analyze verify` passes, with no warning at all, on every unit
  (system and user), with Documentation= man pages looked up in the install
  tree; ExecStart= points at the installed sigild, rewritten into the DESTDIR
  for verify only (verify insists that the binary exists).
- `systemd-analyze security --offline=yes` rates sigild.service <= 1.5.
- systemd-sysusers and systemd-tmpfiles apply the files to a scratch root.
- the installed sigild, started the way sigild.service + sigild.socket start
  it (ExecStart= command line, socket activation of both sockets by name:
  sigild.socket's "sigild" and sigild-ssh-agent.socket's "ssh-agent", NOTIFY_SOCKET, watchdog,
  RUNTIME_DIRECTORY/STATE_DIRECTORY) and confined as the unit confines it
  where that is possible without systemd (LimitMEMLOCK=, LimitCORE=, an
  unprivileged user without capabilities, no_new_privs, and the unit's
  seccomp filter via seccomp-exec.py), answers hello, key.generate and sign
  on the activated socket (the signature checked with pyca/cryptography),
  lists the key to ssh-add -L on the activated ssh-agent socket,
  sends READY=1, STATUS=, WATCHDOG=1, and on SIGTERM STOPPING=1 and exits 0.
"""

import fcntl
import grp
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgtest import scratch, Tap, env, run, need_tool, under, install_tree, lib_env  # noqa: E402

MAX_EXPOSURE = 1.5
HERE = os.path.dirname(os.path.abspath(__file__))


def unit_value(text, key):
    """All values of key= in a unit file, in order."""
    return [m.group(1).strip() for m in
            re.finditer(r'^' + re.escape(key) + r'=(.*)$', text, re.M)]


def verify_units(tap, dest, unitdir, user):
    kind = 'user' if user else 'system'
    src = under(dest, unitdir)
    names = ['sigild.service', 'sigild.socket', 'sigild-ssh-agent.socket']
    for n in names:
        if not tap.ok(os.path.isfile(os.path.join(src, n)),
                      '%s unit %s installed in %s' % (kind, n, unitdir)):
            return
    work = scratch('sigil-units-')
    sigild = env('SIGIL_SIGILD')
    for n in names:
        text = open(os.path.join(src, n)).read()
        text = re.sub(r'^(ExecStart=)' + re.escape(sigild) + r'\b',
                      lambda m: m.group(1) + under(dest, sigild), text, flags=re.M)
        with open(os.path.join(work, n), 'w') as f:
            f.write(text)
    if not user:
        # The master-key credential drop-in from the examples must load too.
        dropin = os.path.join(under(dest, env('SIGIL_EXAMPLESDIR')), 'master-key.conf')
        if tap.ok(os.path.isfile(dropin), 'master-key.conf drop-in example installed', dropin):
            os.mkdir(os.path.join(work, 'sigild.service.d'))
            shutil.copy(dropin, os.path.join(work, 'sigild.service.d', 'master-key.conf'))
    xdg = scratch('sigil-xdg-')
    e = dict(os.environ, MANPATH=under(dest, env('SIGIL_MANDIR')),
             XDG_RUNTIME_DIR=xdg, SYSTEMD_LOG_COLOR='0')
    cmd = ['systemd-analyze'] + (['--user'] if user else []) + \
        ['verify'] + [os.path.join(work, n) for n in names]
    r = run(cmd, env=e)
    out = (r.stdout + r.stderr).strip()
    tap.ok(r.returncode == 0 and out == '',
           'systemd-analyze %sverify: %s units clean' % ('--user ' if user else '', kind),
           '$ %s\nexit %d\n%s' % (' '.join(cmd), r.returncode, out))


def security(tap, dest):
    unit = os.path.join(under(dest, env('SIGIL_UNITDIR')), 'sigild.service')
    r = run(['systemd-analyze', 'security', '--offline=yes', '--no-pager', unit],
            env=dict(os.environ, SYSTEMD_COLORS='0'))
    m = re.search(r'Overall exposure level for sigild\.service: ([0-9.]+) (\S+)', r.stdout)
    if not tap.ok(m is not None, 'systemd-analyze security --offline=yes rates sigild.service',
                  r.stdout + r.stderr):
        return
    level = float(m.group(1))
    tap.diag('exposure %.1f %s' % (level, m.group(2)))
    for line in r.stdout.splitlines():
        if line.startswith('\u2717'):
            tap.diag('  ' + re.sub(r'\s{2,}', '  ', line))
    tap.ok(level <= MAX_EXPOSURE, 'exposure %.1f <= %.1f' % (level, MAX_EXPOSURE))
    # The user unit cannot use the namespace and capability settings in an
    # unprivileged manager; its rating is reported, not bounded.
    uunit = os.path.join(under(dest, env('SIGIL_USERUNITDIR')), 'sigild.service')
    r = run(['systemd-analyze', '--user', 'security', '--offline=yes', '--no-pager', uunit],
            env=dict(os.environ, SYSTEMD_COLORS='0', XDG_RUNTIME_DIR=scratch('sigil-xdg-')))
    m = re.search(r'Overall exposure level for sigild\.service: ([0-9.]+) (\S+)', r.stdout)
    tap.diag('user unit exposure: %s' % (' '.join(m.groups()) if m else (r.stdout + r.stderr)[-500:]))


def sysusers_tmpfiles(tap, dest):
    root = scratch('sigil-root-')
    os.makedirs(os.path.join(root, 'etc'))
    su = os.path.join(under(dest, env('SIGIL_SYSUSERSDIR')), 'sigil.conf')
    tf = os.path.join(under(dest, env('SIGIL_TMPFILESDIR')), 'sigil.conf')
    tap.ok(os.path.isfile(su) and os.path.isfile(tf), 'sysusers.d and tmpfiles.d files installed')
    r = run(['systemd-sysusers', '--root=' + root, su])
    tap.ok(r.returncode == 0, 'systemd-sysusers applies sigil.conf', r.stdout + r.stderr)
    pw = open(os.path.join(root, 'etc/passwd')).read() if os.path.exists(
        os.path.join(root, 'etc/passwd')) else ''
    m = re.search(r'^sigil:x:(\d+):(\d+):[^:]*:/var/lib/sigil:(\S+)$', pw, re.M)
    if not tap.ok(m is not None, 'user sigil with home /var/lib/sigil', pw):
        return
    uid, gid = int(m.group(1)), int(m.group(2))
    tap.ok(uid < 1000 and m.group(3).endswith('nologin'),
           'sigil is a system user without a login shell', m.group(0))
    gr = open(os.path.join(root, 'etc/group')).read()
    tap.ok(re.search(r'^sigil:x:%d:' % gid, gr, re.M) is not None, 'group sigil exists', gr)
    r = run(['systemd-tmpfiles', '--root=' + root, '--create', tf])
    tap.ok(r.returncode == 0 and r.stderr == '', 'systemd-tmpfiles --create applies sigil.conf',
           r.stdout + r.stderr)
    for path, mode in (('/var/lib/sigil', 0o700), ('/run/sigil', 0o750)):
        p = under(root, path)
        try:
            st = os.stat(p)
        except OSError as ex:
            tap.ok(False, '%s created' % path, str(ex))
            continue
        tap.ok((st.st_mode & 0o7777, st.st_uid, st.st_gid) == (mode, uid, gid),
               '%s is %04o sigil:sigil' % (path, mode),
               'got %04o %d:%d' % (st.st_mode & 0o7777, st.st_uid, st.st_gid))


def recv_notify(sock, want, timeout):
    """Collect notify datagrams until one has a line starting with want."""
    got = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            data = sock.recv(4096).decode(errors='replace')
        except socket.timeout:
            break
        got.append(data)
        if any(line.startswith(want) for line in data.split('\n')):
            return True, got
    return False, got


def rpc(path, calls):
    """msgpack-rpc calls [(method, params)] on one connection, in order;
    returns the responses."""
    import msgpack
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    u = msgpack.Unpacker(raw=False)
    out = []
    for msgid, (method, params) in enumerate(calls, 1):
        s.sendall(msgpack.packb([0, msgid, method, [params]], use_bin_type=True))
        while len(out) < msgid:
            data = s.recv(65536)
            if not data:
                raise EOFError('connection closed before the answer to ' + method)
            u.feed(data)
            out.extend(u)
    s.close()
    return out


def size_bytes(v):
    """A systemd size (64M, 8K, 1G, 123) in bytes (base 1024)."""
    m = re.fullmatch(r'(\d+)([KMGT]?)', v.strip())
    if not m:
        raise ValueError(v)
    return int(m.group(1)) * 1024 ** ' KMGT'.index(m.group(2) or ' ')


def activation(tap, dest, user):
    """Start sigild the way the system (or user) units do, without systemd
    as PID 1."""
    kind = 'user' if user else 'system'
    unitfile = os.path.join(under(dest, env('SIGIL_USERUNITDIR' if user else 'SIGIL_UNITDIR')), 'sigild.service')
    unit = open(unitfile).read()
    sockunit = open(os.path.join(os.path.dirname(unitfile), 'sigild.socket')).read()
    agentunit = open(os.path.join(os.path.dirname(unitfile), 'sigild-ssh-agent.socket')).read()
    execstart = unit_value(unit, 'ExecStart')
    if not tap.ok(len(execstart) == 1, '%s: one ExecStart= in sigild.service' % kind, execstart):
        return
    argv = shlex.split(execstart[0])
    sigild = env('SIGIL_SIGILD')
    tap.ok(argv[0] == sigild, '%s: ExecStart= runs the installed sigild %s' % (kind, sigild), argv[0])
    # The socket the unit listens on must be the daemon's default under
    # systemd: $RUNTIME_DIRECTORY/sigild.sock with RuntimeDirectory=sigil
    # (%t is /run for the system manager, $XDG_RUNTIME_DIR for a user's).
    listen = unit_value(sockunit, 'ListenStream')
    rtdir = unit_value(unit, 'RuntimeDirectory')
    want = ['%t/sigil/sigild.sock'] if user else ['/run/sigil/sigild.sock']
    tap.ok(listen == want and rtdir == ['sigil'],
           '%s: ListenStream= is $RUNTIME_DIRECTORY/sigild.sock' % kind, (listen, rtdir))
    # The ssh-agent socket comes from its own unit (FileDescriptorName= names
    # every socket of a unit), next to it; sigild takes both by name.
    alisten = unit_value(agentunit, 'ListenStream')
    awant = [w.replace('sigild.sock', 'ssh-agent.sock') for w in want]
    names = unit_value(sockunit, 'FileDescriptorName') + unit_value(agentunit, 'FileDescriptorName')
    tap.ok(alisten == awant and names == ['sigild', 'ssh-agent']
           and unit_value(agentunit, 'Service') == ['sigild.service']
           and unit_value(unit, 'Sockets') == ['sigild.socket sigild-ssh-agent.socket'],
           '%s: sigild-ssh-agent.socket listens on $RUNTIME_DIRECTORY/ssh-agent.sock, named ssh-agent, '
           'for sigild.service' % kind, (alisten, names))
    # Paths of the command line that live in the install tree move into it.
    argv = [under(dest, a) if a.startswith('/') and os.path.exists(under(dest, a)) else a
            for a in argv]
    top = scratch('sigil-act-')
    if '--config' in argv:
        i = argv.index('--config') + 1
        tap.ok(os.path.isfile(argv[i]), '%s: ' % kind + 'the --config file of ExecStart= is installed', argv[i])
        # The shipped config names group "sigil", which systemd-sysusers
        # creates on a real install. On a machine without it, run the same
        # file with the group replaced by ours (the line is still parsed).
        try:
            grp.getgrnam('sigil')
        except KeyError:
            text = open(argv[i]).read()
            conf = os.path.join(top, 'sigil.conf')
            with open(conf, 'w') as f:
                f.write(re.sub(r'^(allow_gids\s*=\s*)sigil\b', r'\g<1>%d' % os.getgid(), text, flags=re.M))
            tap.diag('no group "sigil" here: allow_gids = sigil becomes %d in a copy' % os.getgid())
            argv[i] = conf

    rundir = os.path.join(top, 'run')
    statedir = os.path.join(top, 'state')
    os.mkdir(rundir, 0o750)
    os.mkdir(statedir, 0o700)
    sockpath = os.path.join(rundir, 'sigild.sock')
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(sockpath)
    os.chmod(sockpath, 0o660)
    lsock.listen(16)
    agentpath = os.path.join(rundir, 'ssh-agent.sock')
    asock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    asock.bind(agentpath)
    os.umask(old_umask)
    asock.listen(16)
    npath = os.path.join(top, 'notify')
    nsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    nsock.bind(npath)
    # systemd sets STATE_DIRECTORY only for a unit with StateDirectory=
    # (the system unit); the user unit leaves sigild to its default under
    # $HOME, like a run from a shell.
    extra = {}
    if unit_value(unit, 'StateDirectory'):
        extra['STATE_DIRECTORY'] = statedir
    else:
        home = os.path.join(top, 'home')
        os.mkdir(home, 0o700)
        if os.geteuid() == 0:
            os.chown(home, 65534, 65534)
        os.rmdir(statedir)
        statedir = os.path.join(home, '.local/state/sigil')
        extra['HOME'] = home
    e = lib_env(dest, dict(extra, **{
        'RUNTIME_DIRECTORY': rundir,
        'NOTIFY_SOCKET': npath,
        'LISTEN_FDS': '2',
        'LISTEN_FDNAMES': ':'.join(names),
        'WATCHDOG_USEC': '1000000',
    }))
    for k in ('XDG_STATE_HOME', 'STATE_DIRECTORY') if 'HOME' in extra else ():
        e.pop(k, None)
    e.pop('LISTEN_PID', None)
    e.pop('WATCHDOG_PID', None)
    # The listening socket goes to fd 3 (SD_LISTEN_FDS_START) through fd 5-9
    # (dash knows one-digit fds only);
    # LISTEN_PID and WATCHDOG_PID must be sigild's pid: sh's $$ survives exec.
    lfd = fcntl.fcntl(lsock.fileno(), fcntl.F_DUPFD, 5)
    afd = fcntl.fcntl(asock.fileno(), fcntl.F_DUPFD, 5)
    assert lfd <= 9 and afd <= 9, (lfd, afd)
    script = 'exec 3<&%d 4<&%d %d<&- %d<&-; LISTEN_PID=$$ WATCHDOG_PID=$$ exec "$@"' % (lfd, afd, lfd, afd)
    # The unit's limits (LimitMEMLOCK=, LimitCORE=) through prlimit and, as
    # root, its unprivileged user (User=, CapabilityBoundingSet=,
    # NoNewPrivileges=) through setpriv, with uid/gid 65534 standing in for
    # the sigil user. mlock must then work within LimitMEMLOCK.
    memlock = size_bytes(unit_value(unit, 'LimitMEMLOCK')[0])
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    if hard != resource.RLIM_INFINITY and hard < memlock:
        # Raising it needs CAP_SYS_RESOURCE, which systemd has and this
        # process may lack (containers): a lower limit is a harder test.
        tap.diag('LimitMEMLOCK=%d is above our hard limit %d: using %d' % (memlock, hard, hard))
        memlock = hard
    core = size_bytes(unit_value(unit, 'LimitCORE')[0])
    wrap = ['prlimit', '--memlock=%d:%d' % (memlock, memlock), '--core=%d:%d' % (core, core), '--',
            'setpriv', '--no-new-privs']
    # Last, the unit's seccomp filter (SystemCallFilter=, MemoryDenyWriteExecute=,
    # RestrictNamespaces=, RestrictAddressFamilies=), as systemd applies it
    # after dropping privileges; the helper is copied where uid 65534 can read it.
    helper = os.path.join(top, 'seccomp-exec.py')
    shutil.copy(os.path.join(HERE, 'seccomp-exec.py'), helper)
    os.chmod(helper, 0o755)
    filt = ['--', '/usr/bin/python3', helper, unitfile]
    if os.geteuid() == 0:
        wrap += ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', '--bounding-set=-all']
        for d in (rundir, statedir):
            if os.path.isdir(d):
                os.chown(d, 65534, 65534)
        for d in (top, dest):
            os.chmod(d, 0o755)
        os.chmod(npath, 0o666)
        tap.diag('running as uid 65534 with RLIMIT_MEMLOCK %d, no capabilities, no_new_privs, '
                 'the unit\'s seccomp filter' % memlock)
    cmd = ['/bin/sh', '-c', script, 'sh'] + wrap + filt + argv
    if os.geteuid() != 0:
        cmd.append('--allow-unlocked-memory')
    tap.diag('$ ' + ' '.join(shlex.quote(a) for a in argv))
    errlog = open(os.path.join(top, 'stderr'), 'w+')
    p = subprocess.Popen(cmd, env=e, pass_fds=(lfd, afd), stdout=errlog, stderr=errlog)
    os.close(lfd)
    os.close(afd)
    lsock.close()
    asock.close()
    try:
        ok, got = recv_notify(nsock, 'READY=1', 20)
        tap.ok(ok, '%s: ' % kind + 'sigild sends READY=1 on NOTIFY_SOCKET', repr(got))
        agent = os.path.join(rundir, 'ssh-agent.sock')
        st = os.stat(agent) if os.path.exists(agent) else None
        tap.ok(st is not None and stat.S_ISSOCK(st.st_mode) and st.st_mode & 0o777 == 0o600,
               '%s: the ssh-agent socket is $RUNTIME_DIRECTORY/ssh-agent.sock, mode 0600' % kind,
               'stat: %r; %s holds %s' % (st, rundir, os.listdir(rundir)))
        try:
            status = open('/proc/%d/status' % p.pid).read()
        except OSError as ex:
            status = str(ex)
        conf = dict(re.findall(r'^(Seccomp|NoNewPrivs|CapEff|CapBnd|Uid):\s*(.*)$', status, re.M))
        want_uid = '65534' if os.geteuid() == 0 else str(os.getuid())
        tap.ok(conf.get('Seccomp') == '2' and conf.get('NoNewPrivs') == '1'
               and conf.get('Uid', '').split()[:1] == [want_uid]
               and (os.geteuid() != 0 or int(conf.get('CapBnd', '1'), 16) == 0),
               '%s: sigild runs confined: seccomp filter, no_new_privs, uid %s, no capabilities' % (kind, want_uid),
               repr(conf))
        try:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
            msg = b'sigil packaging test'
            hello, gen, sig = rpc(sockpath, [
                ('hello', {}),
                ('key.generate', {'type': 'ed25519', 'label': 'unit-test'}),
                ('sign', {'key': 'unit-test', 'message': msg}),
            ])
            good = (isinstance(hello, list) and len(hello) == 4 and hello[:3] == [1, 1, None]
                    and isinstance(hello[3], dict))
            tap.ok(good, '%s: ' % kind + 'hello answered on the socket passed by socket activation', repr(hello))
            tap.ok(gen[2] is None and sig[2] is None,
                   '%s: ' % kind + 'key.generate and sign work under the unit\'s user, memlock and core limits',
                   repr((gen, sig)))
            pk = gen[3]['key']['public_key']
            try:
                Ed25519PublicKey.from_public_bytes(pk).verify(sig[3]['signature'], msg)
                verified = True
            except Exception:  # noqa: BLE001 - InvalidSignature or a malformed answer
                verified = False
            tap.ok(verified, '%s: ' % kind + 'the signature verifies with pyca/cryptography')
            r = run(['ssh-add', '-L'], env=dict(os.environ, SSH_AUTH_SOCK=agentpath))
            tap.ok(r.returncode == 0 and r.stdout.startswith('ssh-ed25519 '),
                   '%s: ssh-add -L lists the key on the ssh-agent socket passed by name' % kind,
                   r.stdout + r.stderr)
            keys = os.path.join(statedir, 'keys')
            tap.ok(os.path.isdir(keys) and len(os.listdir(keys)) == 1,
                   '%s: the key file is in the state directory %s' % (kind, statedir),
                   os.listdir(keys) if os.path.isdir(keys) else 'no %s' % keys)
        except Exception as ex:  # noqa: BLE001 - any failure is the test's answer
            tap.ok(False, '%s: ' % kind + 'hello, key.generate, sign on the activated socket', repr(ex))
        ok, got2 = recv_notify(nsock, 'WATCHDOG=1', 5)
        tap.ok(ok, '%s: ' % kind + 'sigild sends WATCHDOG=1 with WATCHDOG_USEC=1000000', repr(got2))
        tap.ok(any('STATUS=' in g for g in got + got2), '%s: ' % kind + 'sigild sends STATUS=', repr(got + got2))
        p.send_signal(signal.SIGTERM)
        ok, got = recv_notify(nsock, 'STOPPING=1', 20)
        tap.ok(ok, '%s: ' % kind + 'SIGTERM: sigild sends STOPPING=1', repr(got))
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        tap.ok(rc == 0, '%s: ' % kind + 'SIGTERM: sigild exits 0', 'exit status %d' % rc)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        errlog.seek(0)
        tap.diag('sigild stderr:\n' + errlog.read()[-3000:])


def main():
    tap = Tap()
    need_tool(tap, 'systemd-analyze')
    need_tool(tap, 'systemd-sysusers')
    need_tool(tap, 'systemd-tmpfiles')
    need_tool(tap, 'man')
    need_tool(tap, 'prlimit')
    need_tool(tap, 'setpriv')
    need_tool(tap, 'ssh-add')
    dest = install_tree(tap)
    verify_units(tap, dest, env('SIGIL_UNITDIR'), user=False)
    verify_units(tap, dest, env('SIGIL_USERUNITDIR'), user=True)
    security(tap, dest)
    sysusers_tmpfiles(tap, dest)
    activation(tap, dest, user=False)
    activation(tap, dest, user=True)
    tap.done()


if __name__ == '__main__':
    main()
