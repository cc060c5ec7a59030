#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ci-arm64.sh [--noasm] [--slow]: sigil's crypto on AArch64, cross-built
# with Debian's gcc-aarch64-linux-gnu (tests/cross/aarch64-linux-gnu.ini)
# and run under qemu-user.
#
#   1. installs the cross compiler, qemu-user and the arm64 -dev libraries
#      the build needs (Debian multiarch; apt-get only when one is missing);
#   2. build-ci/arm64 (-Dasm=enabled: the AArch64 assembly of crypto/asm/
#      arm64): the whole 'crypto' suite and the 'asm' suite under
#      qemu-aarch64. "fe64 arm64 assembly vs C twins" asserts that
#      sigil_crypto_impl() is "arm64", so the suite runs the assembly, and
#      this script checks that the test is there;
#   3. --noasm: build-ci/arm64-noasm (-Dasm=disabled): the 'crypto' suite
#      on the portable C;
#   4. --slow: RFC 7748's 1,000,000 iterations ('slow' suite's X25519 test)
#      in build-ci/arm64.
# Only the test programs of those suites are built (the daemon and client
# are not needed for them). Run as root (or with sudo) on Debian 12; safe to
# run again. Meson's logs: build-ci/arm64*/meson-logs/arm64*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
noasm=0 slow=0
for a in "$@"; do
	case "$a" in
	--noasm) noasm=1 ;;
	--slow) slow=1 ;;
	*) echo "usage: $0 [--noasm] [--slow]" >&2; exit 2 ;;
	esac
done

export DEBIAN_FRONTEND=noninteractive
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
pkgs=(gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user
      libc6-dev:arm64 libuv1-dev:arm64 libmsgpack-dev:arm64 libsystemd-dev:arm64
      libsodium-dev:arm64 libcmocka-dev:arm64 libssl-dev:arm64)
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	as_root dpkg --add-architecture arm64
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "=== arm64: installing ${missing[*]}"
	as_root apt-get update -q
	as_root apt-get install -y -q "${pkgs[@]}"
fi

export MESON_TESTTHREADS=${MESON_TESTTHREADS:-2}
status=0
mkdir -p build-ci

# The test programs of the given suites (the build outputs their commands
# name), from meson's introspection of build-ci/NAME.
suite_targets() {
	local name=$1
	shift
	meson introspect --tests "build-ci/$name" | /usr/bin/python3 -c '
import json, os, sys
root = os.path.abspath(sys.argv[1])
want = set(sys.argv[2:])
out = set()
for t in json.load(sys.stdin):
    if want & {s.split(":")[-1] for s in t["suite"]}:
        for c in t["cmd"]:
            c = os.path.normpath(c)
            if c.startswith(root + "/"):
                out.add(os.path.relpath(c, root))
print("\n".join(sorted(out)))' "build-ci/$name" "$@"
}

# configure NAME SUITE... -- SETUPARGS...: a fresh cross build directory
# with only the test programs of SUITEs (and the crypto library) built.
configure() {
	local name=$1 suites=()
	shift
	while [ "$1" != -- ]; do suites+=("$1"); shift; done
	shift
	echo "=== $name: meson setup --cross-file tests/cross/aarch64-linux-gnu.ini $*"
	rm -rf "build-ci/$name"
	if ! meson setup "build-ci/$name" --cross-file tests/cross/aarch64-linux-gnu.ini "$@" \
		>"build-ci/$name.setup.log" 2>&1; then
		cat "build-ci/$name.setup.log"; echo "=== $name: setup FAILED"; status=1; return 1
	fi
	local targets
	mapfile -t targets < <(suite_targets "$name" "${suites[@]}")
	if ! ninja -C "build-ci/$name" crypto/libsigil-crypto.a "${targets[@]}" \
		>"build-ci/$name.build.log" 2>&1; then
		grep -A20 FAILED "build-ci/$name.build.log" | head -60; echo "=== $name: build FAILED"; status=1; return 1
	fi
	echo "=== $name: built at $(( $(date +%s) - t0 )) s"
}

# check NAME LOGNAME TESTARGS...
check() {
	local name=$1 logname=$2
	shift 2
	echo "=== $name: meson test $*"
	# qemu-user runs the tests several times slower than the CPU would
	meson test -C "build-ci/$name" --no-rebuild --print-errorlogs --timeout-multiplier 4 \
		--logbase "$logname" "$@" || status=1
	echo "=== $name: done at $(( $(date +%s) - t0 )) s"
}

if configure arm64 crypto asm -- -Dasm=enabled; then
	# the assembly's own test must be part of the run (a build without the
	# arm64 assembly would simply not have it)
	list=$(meson test -C build-ci/arm64 --list 2>/dev/null || true)
	if ! grep -q 'fe64 arm64 assembly vs C twins$' <<<"$list"; then
		echo "=== arm64: the test 'fe64 arm64 assembly vs C twins' is missing"; status=1
	fi
	check arm64 arm64 --suite crypto --suite asm
	if [ "$slow" = 1 ]; then
		check arm64 arm64-slow 'X25519 iterated 1000000'
	fi
fi

if [ "$noasm" = 1 ] && configure arm64-noasm crypto -- -Dasm=disabled; then
	check arm64-noasm arm64-noasm --suite crypto
fi

echo "=== arm64: $( [ $status = 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - t0 )) s"
exit $status
