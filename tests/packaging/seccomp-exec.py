#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""seccomp-exec - run a command under the system call filter of a unit file,
the way systemd would: SystemCallFilter= (an allow list, then ~deny lists),
SystemCallErrorNumber=, SystemCallArchitectures=native, and the seccomp
parts of MemoryDenyWriteExecute=yes, RestrictNamespaces=yes and
RestrictAddressFamilies=AF_UNIX, built with libseccomp (through ctypes) from
the groups `systemd-analyze syscall-filter` prints. systemd itself cannot run
here (it is not PID 1), so check-units.py uses this to show that sigild
works inside its unit's filter.

    seccomp-exec.py UNIT-FILE COMMAND [ARGS...]

Needs no_new_privs (setpriv --no-new-privs) or CAP_SYS_ADMIN.
"""

import ctypes
import ctypes.util
import errno
import os
import re
import subprocess
import sys


def group(name, seen):
    """The system calls of a group (recursively) or a single name."""
    if not name.startswith('@'):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    out = subprocess.run(['systemd-analyze', 'syscall-filter', '--no-pager', name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        w = line.strip()
        if not w or w.startswith('#'):
            continue
        calls |= group(w, seen)
    return calls


def unit_filter(text):
    allow = None
    deny = set()
    for m in re.finditer(r'^SystemCallFilter=(.*)$', text, re.M):
        v = m.group(1).strip()
        negate = v.startswith('~')
        names = set()
        for w in v.lstrip('~').split():
            names |= group(w, set())
        if negate:
            if allow is None:
                deny |= names
            else:
                allow -= names
        else:
            allow = names if allow is None else allow | names
    if allow is None:
        sys.exit('seccomp-exec: the unit has no SystemCallFilter= allow list')
    errname = re.search(r'^SystemCallErrorNumber=(\S+)$', text, re.M)
    err = getattr(errno, errname.group(1)) if errname else None
    mdwe = re.search(r'^MemoryDenyWriteExecute=(yes|true|on|1)$', text, re.M) is not None
    nons = re.search(r'^RestrictNamespaces=(yes|true|on|1)$', text, re.M) is not None
    unix_only = re.search(r'^RestrictAddressFamilies=AF_UNIX$', text, re.M) is not None
    return allow - deny, err, mdwe, nons, unix_only


class ArgCmp(ctypes.Structure):
    _fields_ = [('arg', ctypes.c_uint), ('op', ctypes.c_int),
                ('datum_a', ctypes.c_uint64), ('datum_b', ctypes.c_uint64)]


SCMP_ACT_KILL_PROCESS = 0x80000000
SCMP_ACT_ALLOW = 0x7fff0000
SCMP_CMP_NE, SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ = 1, 4, 7
CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
AF_UNIX = 1
PROT_WRITE, PROT_EXEC = 0x2, 0x4


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    allowed, err, mdwe, nons, unix_only = unit_filter(open(sys.argv[1]).read())
    lib = ctypes.CDLL(ctypes.util.find_library('seccomp') or 'libseccomp.so.2', use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    default = (0x00050000 | err) if err is not None else SCMP_ACT_KILL_PROCESS  # SCMP_ACT_ERRNO
    ctx = lib.seccomp_init(default)
    if not ctx:
        sys.exit('seccomp-exec: seccomp_init failed')

    def allow(name, conds=(), action=SCMP_ACT_ALLOW):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a system call of this architecture
        arr = (ArgCmp * max(1, len(conds)))(*conds)
        r = lib.seccomp_rule_add_array(ctx, action, nr, len(conds), arr)
        if r < 0:
            sys.exit('seccomp-exec: rule for %s failed: %d' % (name, r))

    # MemoryDenyWriteExecute: no mapping both writable and executable, no
    # mprotect to executable (systemd's rules); expressed as allow rules
    # because the default action refuses.
    wx = PROT_WRITE | PROT_EXEC
    guarded = {'mmap': [(2, [0, PROT_WRITE, PROT_EXEC])],
               'mmap2': [(2, [0, PROT_WRITE, PROT_EXEC])],
               'mprotect': [(2, [0, PROT_WRITE])],
               'pkey_mprotect': [(2, [0, PROT_WRITE])]} if mdwe else {}
    for name in sorted(allowed):
        if name in guarded:
            for argno, values in guarded[name]:
                mask = wx
                for v in values:
                    allow(name, [ArgCmp(argno, SCMP_CMP_MASKED_EQ, mask, v)])
        elif nons and name in ('unshare', 'setns'):
            pass  # RestrictNamespaces=yes
        elif nons and name == 'clone':
            allow(name, [ArgCmp(0, SCMP_CMP_MASKED_EQ, CLONE_NEW, 0)])
        elif nons and name == 'clone3':
            allow(name, action=0x00050000 | errno.ENOSYS)  # systemd: glibc falls back to clone
        elif unix_only and name == 'socket':
            allow(name, [ArgCmp(0, SCMP_CMP_EQ, AF_UNIX, 0)])
            allow(name, [ArgCmp(0, SCMP_CMP_NE, AF_UNIX, 0)], 0x00050000 | errno.EAFNOSUPPORT)
        elif mdwe and name == 'shmat':
            allow(name, [ArgCmp(2, SCMP_CMP_MASKED_EQ, 0o100000, 0)])  # no SHM_EXEC
        else:
            allow(name)
    if lib.seccomp_load(ctx) < 0:
        sys.exit('seccomp-exec: seccomp_load failed (no_new_privs set?)')
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == '__main__':
    main()
