#!/bin/sh
# SPDX-License-Identifier: MIT
# run-ctgrind.sh - run a tests/ct executable under Valgrind Memcheck (ctgrind)
# and print the verdict as TAP.
#
#   run-ctgrind.sh [--valgrind PATH] [--expect-leak FUNC]... [--expect-clean FUNC]... EXE [ARGS]
#
# Without --expect-leak: passes when EXE ran to the end with all results
# right AND Valgrind reported no error at all (a secret-dependent branch or
# address shows up as "Conditional jump or move depends on uninitialised
# value(s)" or "Use of uninitialised value of size N").
# With --expect-leak (the control): passes when Valgrind exited with 99,
# EXE's results were right, the report names every FUNC given with
# --expect-leak, contains both kinds of error, and names no FUNC given with
# --expect-clean.
# A missing valgrind is a failure, never a skip.
set -u

valgrind=""
leaks=""
cleans=""
while [ $# -gt 0 ]; do
	case "$1" in
	--valgrind) valgrind="$2"; shift 2 ;;
	--expect-leak) leaks="$leaks $2"; shift 2 ;;
	--expect-clean) cleans="$cleans $2"; shift 2 ;;
	--) shift; break ;;
	-*) echo "run-ctgrind.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ]; then
	echo "usage: run-ctgrind.sh [--valgrind PATH] [--expect-leak FUNC]... [--expect-clean FUNC]... EXE [ARGS]" >&2
	exit 2
fi
exe="$1"
shift

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }

[ -n "$valgrind" ] || valgrind=$(command -v valgrind || true)
if [ -z "$valgrind" ] || [ ! -x "$valgrind" ]; then
	echo "1..1"
	notok "valgrind not found (install valgrind; ctgrind cannot run without it)"
	exit 1
fi

# Valgrind hides ADX from CPUID; tell the executable what the host has, so
# that it can run the amd64 assembly directly (tests/ct/ctgrind-asm-amd64.c)
if grep -qw adx /proc/cpuinfo 2>/dev/null && grep -qw bmi2 /proc/cpuinfo 2>/dev/null; then
	SIGIL_CTGRIND_HOST_ADX=1
else
	SIGIL_CTGRIND_HOST_ADX=0
fi
export SIGIL_CTGRIND_HOST_ADX
# the same for the SHA-512 block function (AVX2, BMI1, BMI2), whatever
# CPUID under Valgrind says
if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw bmi1 /proc/cpuinfo 2>/dev/null &&
   grep -qw bmi2 /proc/cpuinfo 2>/dev/null; then
	SIGIL_CTGRIND_HOST_AVX2=1
else
	SIGIL_CTGRIND_HOST_AVX2=0
fi
export SIGIL_CTGRIND_HOST_AVX2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ctgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
log="$tmp/valgrind.log"
out="$tmp/stdout"

"$valgrind" --tool=memcheck --error-exitcode=99 --track-origins=yes \
	--num-callers=40 --log-file="$log" "$exe" "$@" >"$out" 2>&1
rc=$?

# the executable's own lines are TAP comments ("# ...")
sed 's/^\([^#]\)/# \1/' "$out"
errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
[ -n "$errors" ] || errors="unknown"

dump_log() {
	echo "# ---- valgrind report ($log) ----"
	sed 's/^/# /' "$log"
}

if [ -z "$leaks" ]; then
	echo "1..3"
	if grep -q "all results right" "$out"; then
		ok "$(basename "$exe"): every case ran and every result is right"
	else
		notok "$(basename "$exe"): a result was wrong or the run did not finish (exit status $rc)"
	fi
	if [ "$errors" = "0" ]; then
		ok "valgrind: 0 errors (no branch or address depends on a secret)"
	else
		notok "valgrind: $errors errors (secret-dependent branch/address, or a memory error)"
		dump_log
	fi
	if [ "$rc" -eq 0 ]; then
		ok "exit status 0"
	else
		notok "exit status $rc (99 = valgrind errors)"
	fi
else
	nl=0
	for f in $leaks $cleans; do nl=$((nl + 1)); done
	echo "1..$((nl + 4))"
	if [ "$rc" -eq 99 ]; then
		ok "valgrind exited with 99: it reported the planted leaks"
	else
		notok "valgrind exit status $rc, want 99: the harness did not see the planted leaks"
	fi
	if grep -q "all results right" "$out"; then
		ok "$(basename "$exe"): every case ran and every result is right"
	else
		notok "$(basename "$exe"): a result was wrong or the run did not finish"
	fi
	if grep -q "Conditional jump or move depends on uninitialised value" "$log"; then
		ok "report has a secret-dependent conditional jump"
	else
		notok "report has no secret-dependent conditional jump"
	fi
	if grep -q "Use of uninitialised value of size" "$log"; then
		ok "report has a secret-dependent address"
	else
		notok "report has no secret-dependent address"
	fi
	for f in $leaks; do
		if grep -q "$f" "$log"; then
			ok "report names $f"
		else
			notok "report does not name $f"
		fi
	done
	for f in $cleans; do
		if grep -q "$f" "$log"; then
			notok "report names $f, which is constant time"
		else
			ok "report does not name $f (constant time)"
		fi
	done
	[ $failed -eq 0 ] || dump_log
fi
exit $failed
