#!/bin/sh
# SPDX-License-Identifier: MIT
# sigild-valgrind.sh - run sigild under Valgrind Memcheck, for the tests
# that start sigild through $SIGILD (tests/daemon, tests/load, tests/faults):
#
#   SIGILD_REAL=build/daemon/sigild SIGILD=tests/fuzz/sigild-valgrind.sh \
#     meson test -C build --suite daemon --suite load --suite faults
#
# Any Memcheck error, or a definite leak at exit, makes sigild exit 99,
# which the tests see as a failed exit status. Each run's report goes to
# $SIGIL_VALGRIND_LOGS/sigild.<pid>.log (default /tmp/sigild-valgrind).
set -eu
logs=${SIGIL_VALGRIND_LOGS:-/tmp/sigild-valgrind}
mkdir -p "$logs"
exec valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite --track-fds=no -q --log-file="$logs/sigild.%p.log" \
	"${SIGILD_REAL:?set SIGILD_REAL to the sigild binary}" "$@"
