#!/bin/sh
# SPDX-License-Identifier: MIT
# run-dudect.sh - run the dudect timing test for a bounded time and print
# max |t| and the number of measurements per target.
#
#   run-dudect.sh [DUDECT_EXE] [--seconds S] [other dudect options]
#   ninja -C BUILD dudect                 (the run_target; 300 s)
#   meson compile -C BUILD dudect:run     (the same)
#   SIGIL_DUDECT_SECONDS=60 ninja -C BUILD dudect
#
# Default: 300 s in total (SIGIL_DUDECT_SECONDS overrides), split between
# x25519, ed25519_sign, sc_reduce, sc_muladd and the control. Exit status is
# dudect's: 0 clean and control detected, 1 a target leaks, 2 the control
# was not detected (the run proves nothing), 3 usage, 4 a target got too
# few measurements (inconclusive). Not a CI test: the
# numbers depend on the machine and its load; use a quiet machine, a release
# build (--buildtype=release), and record the output in docs/constant-time.md.
set -u
here=$(dirname "$0")
exe=""
if [ $# -gt 0 ] && [ -x "$1" ] && [ ! -d "$1" ]; then
	exe="$1"
	shift
fi
if [ -z "$exe" ]; then
	for c in "$here/dudect" "${MESON_BUILD_ROOT:-.}/tests/ct/dudect"; do
		if [ -x "$c" ]; then exe="$c"; break; fi
	done
fi
if [ -z "$exe" ]; then
	echo "run-dudect.sh: dudect executable not found (give its path)" >&2
	exit 3
fi
seconds="${SIGIL_DUDECT_SECONDS:-300}"
case " $* " in
*" --seconds "*) set -- "$@" ;;
*) set -- --seconds "$seconds" "$@" ;;
esac
echo "run-dudect.sh: $exe $*"
start=$(date +%s)
"$exe" "$@"
rc=$?
end=$(date +%s)
echo "run-dudect.sh: exit $rc after $((end - start)) s wall time"
exit $rc
