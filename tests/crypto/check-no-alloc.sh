#!/bin/bash
# SPDX-License-Identifier: MIT
# check-no-alloc.sh NM ARCHIVE - libsigil-crypto allocates nothing and does
# no I/O (STYLE.md sections 1 and 5; the C analogue of edwards25519's
# AllocsPerRun == 0). Lists the symbols ARCHIVE takes from outside itself
# (`nm -u` minus what its own objects define) and fails on any allocator,
# stdio, environment or process call. Output is TAP.
set -u

nm_prog=${1:?usage: check-no-alloc.sh NM ARCHIVE}
archive=${2:?usage: check-no-alloc.sh NM ARCHIVE}

echo "1..3"
if [ ! -s "$archive" ]; then
	echo "not ok 1 - archive $archive exists"
	exit 1
fi
echo "ok 1 - archive $archive exists"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! "$nm_prog" -u "$archive" >"$tmp/u.raw" 2>"$tmp/err" ||
   ! "$nm_prog" --defined-only "$archive" >"$tmp/d.raw" 2>>"$tmp/err"; then
	echo "not ok 2 - $nm_prog reads the archive"
	sed 's/^/# /' "$tmp/err"
	exit 1
fi
awk 'NF >= 2 && $(NF-1) == "U" { print $NF }' "$tmp/u.raw" | sort -u >"$tmp/u"
awk 'NF >= 3 && $(NF-1) ~ /^[A-TV-Z]$/ { print $NF }' "$tmp/d.raw" | sort -u >"$tmp/d"
# the object files must define something, or nm read nothing useful
if [ ! -s "$tmp/d" ]; then
	echo "not ok 2 - $nm_prog lists the archive's symbols"
	exit 1
fi
echo "ok 2 - $nm_prog lists the archive's symbols"
comm -23 "$tmp/u" "$tmp/d" >"$tmp/external"
echo "# symbols libsigil-crypto takes from outside:"
sed 's/^/#   /' "$tmp/external"

# Allocation, stdio/printf (incl. the _FORTIFY_SOURCE __*_chk forms), files,
# environment, process exit. __assert_fail (the debug bound checks) is allowed.
forbidden='^(malloc|calloc|realloc|reallocarray|free|aligned_alloc|posix_memalign|memalign|valloc|pvalloc|strdup|strndup|mmap|munmap|brk|sbrk|__libc_malloc|__libc_free|printf|fprintf|sprintf|snprintf|vprintf|vfprintf|vsprintf|vsnprintf|dprintf|asprintf|vasprintf|puts|fputs|putc|fputc|putchar|fwrite|fread|fopen|fdopen|freopen|fclose|fflush|perror|open|open64|openat|read|write|close|syslog|getenv|secure_getenv|exit|_exit|abort|stdout|stderr|stdin|__printf_chk|__fprintf_chk|__sprintf_chk|__snprintf_chk|__vprintf_chk|__vfprintf_chk|__vsnprintf_chk|__vsprintf_chk|__fread_chk|__read_chk|operator new|_Znwm|_Znam|_ZdlPv|_ZdaPv)(@.*)?$'
if grep -E "$forbidden" "$tmp/external" >"$tmp/bad"; then
	echo "not ok 3 - no allocation, stdio, environment or exit calls"
	sed 's/^/# forbidden: /' "$tmp/bad"
	exit 1
fi
echo "ok 3 - no allocation, stdio, environment or exit calls"
