#!/bin/sh
# SPDX-License-Identifier: MIT
# sigild-valgrind.sh SIGILD [ARGS...] - run sigild under Valgrind Memcheck.
# tests/load and tests/faults start sigild through it when SIGILD_WRAPPER
# names this script:
#
#   SIGILD_WRAPPER=$PWD/tests/fuzz/sigild-valgrind.sh SIGIL_LOAD_RSS_SLACK_MB=512 \
#     SIGIL_LOAD_MAX_RSS_MB=1024 meson test -C build --suite load --suite faults
#
# Any Memcheck error, or a definite leak at exit, makes sigild exit 99,
# which the tests see as a failed exit status. Reports go to
# $SIGIL_VALGRIND_LOGS/sigild.<pid>.log (default /tmp/sigild-valgrind).
set -eu
logs=${SIGIL_VALGRIND_LOGS:-/tmp/sigild-valgrind}
mkdir -p "$logs"
exec valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--show-leak-kinds=definite -q --log-file="$logs/sigild.%p.log" "$@"
