#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-fuzz.sh - run sigil's libFuzzer targets (build with -Dfuzz=true, CC=clang)
#
#   tests/fuzz/run-fuzz.sh [--build DIR] [--seconds N] [--jobs N] [--merge] [TARGET...]
#   tests/fuzz/run-fuzz.sh [--build DIR] --replay [TARGET...]
#
# Each target starts from its committed corpus (tests/fuzz/corpus/<target>,
# read only) plus a scratch directory that receives the new inputs. With
# --merge, new inputs that add coverage are merged into the committed
# corpus at the end (libFuzzer -merge=1; review and commit them).
# A crash leaves its input in <build>/fuzz-artifacts/<target>/: copy it to
# tests/fuzz/regressions/<target>/ so every build replays it.
# --replay runs the corpus and the regressions once (no fuzzing).
# --ci (meson's suite 'fuzz') takes the time from $SIGIL_FUZZ_SECONDS when
# set. Prints one summary line per target: executions, exec/s, corpus
# size, peak RSS. Exit status: 0 if no target crashed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build="$src/build-fuzz"
seconds=60
jobs=1
merge=0
replay=0
ci=0
targets=()
all=(rpc agent proto-decode keyfile keyfile-sealed ed25519-verify ge-decode x25519 sshsig minisign signify keys age-plugin)

while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--merge) merge=1; shift ;;
	--replay) replay=1; shift ;;
	--ci) ci=1; shift ;;
	-h|--help) sed -n '3,19p' "$0"; exit 0 ;;
	-*) echo "run-fuzz.sh: unknown option $1" >&2; exit 2 ;;
	*) targets+=("$1"); shift ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
if [ "$ci" = 1 ] && [ -n "${SIGIL_FUZZ_SECONDS:-}" ]; then
	seconds=$SIGIL_FUZZ_SECONDS
fi

max_len() {
	case "$1" in
	rpc|agent|proto-decode) echo 16384 ;;
	*) echo 4096 ;;
	esac
}

# UB is fatal. Known, reported bugs (ubsan-known.supp) are suppressed while
# fuzzing and replaying the corpus, never when replaying the regressions.
ubsan_base="halt_on_error=1:print_stacktrace=1"
ubsan_fuzz="$ubsan_base:suppressions=$here/ubsan-known.supp"
# the same for the targets' own oracles (fuzz_skip_known() in fuzz.h)
known_fuzz=(env SIGIL_FUZZ_SKIP_KNOWN=1)
known_base=(env -u SIGIL_FUZZ_SKIP_KNOWN)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

status=0
for t in "${targets[@]}"; do
	exe="$build/tests/fuzz/fuzz-$t"
	corpus="$here/corpus/$t"
	regress="$here/regressions/$t"
	if [ ! -x "$exe" ]; then
		echo "run-fuzz.sh: $exe is missing (CC=clang meson setup $build -Dfuzz=true)" >&2
		status=1
		continue
	fi
	if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
		echo "run-fuzz.sh: no seed corpus in $corpus" >&2
		status=1
		continue
	fi
	art="$build/fuzz-artifacts/$t"
	mkdir -p "$art"
	log="$art/fuzz.log"
	inputs=("$corpus")
	has_regress=0
	if [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
		inputs+=("$regress")
		has_regress=1
	fi
	common=(-max_len="$(max_len "$t")" -timeout=30 -rss_limit_mb=2048 -artifact_prefix="$art/"
	        -print_final_stats=1)
	if [ "$replay" = 1 ]; then
		UBSAN_OPTIONS=$ubsan_fuzz "${known_fuzz[@]}" "$exe" "${common[@]}" -runs=0 "$corpus" >"$log" 2>&1
		r=$?
		n=$(grep -o 'INITED cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$log" | tail -1)
		if [ $r -ne 0 ]; then
			echo "FAIL replay $t corpus (exit $r); log: $log"; tail -40 "$log"; status=1
		else
			echo "ok replay $t corpus: ${n:-?}"
		fi
		if [ "$has_regress" = 1 ]; then
			# one process per input: each regression is checked on its own
			for f in "$regress"/*; do
				UBSAN_OPTIONS=$ubsan_base "${known_base[@]}" "$exe" "${common[@]}" "$f" >"$log.regress" 2>&1
				r=$?
				if [ $r -ne 0 ]; then
					echo "FAIL replay $t regression $(basename "$f") (exit $r):"
					grep -E 'runtime error|ERROR: AddressSanitizer|check failed|^    #[0-9] ' "$log.regress" | head -12
					status=1
				else
					echo "ok replay $t regression $(basename "$f")"
				fi
			done
		fi
		continue
	fi
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/sigil-fuzz-$t.XXXXXX")
	par=()
	if [ "$jobs" -gt 1 ]; then
		par=(-jobs="$jobs" -workers="$jobs")
	fi
	UBSAN_OPTIONS=$ubsan_fuzz "${known_fuzz[@]}" "$exe" "${common[@]}" -max_total_time="$seconds" "${par[@]}" \
		"$scratch" "$corpus" >"$log" 2>&1
	r=$?
	if [ "$jobs" -gt 1 ]; then
		cat fuzz-*.log >>"$log" 2>/dev/null; rm -f fuzz-*.log
	fi
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
	eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
	rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | awk '{if ($2>m) m=$2} END {print m+0}')
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
	nseed=$(ls -A "$corpus" | wc -l)
	nnew=$(ls -A "$scratch" | wc -l)
	if [ $r -ne 0 ]; then
		echo "FAIL fuzz $t (exit $r) after ${seconds}s; crash input in $art/; log: $log"
		grep -E '^==[0-9]+==|SUMMARY|check failed|runtime error' "$log" | head -20
		tail -60 "$log"
		status=1
	else
		echo "ok fuzz $t: ${seconds}s, $execs execs, $eps exec/s, $cov, seeds $nseed + $nnew new, peak RSS ${rss} MB"
	fi
	if [ "$merge" = 1 ] && [ "$nnew" -gt 0 ]; then
		"$exe" -merge=1 -max_len="$(max_len "$t")" "$corpus" "$scratch" >>"$log" 2>&1 || status=1
		echo "   merged: corpus $t now has $(ls -A "$corpus" | wc -l) inputs"
	fi
	rm -rf "$scratch"
done
exit $status
