#!/bin/sh
# SPDX-License-Identifier: MIT
# build-deb.sh - build sigil's Debian packages (sigild, sigil-tools, libsigil0,
# libsigil-dev, libsigil-crypto0, libsigil-crypto-dev) from this source tree.
#
#   packaging/build-deb.sh OUTDIR
#
# Copies the source tree (the files git tracks or would track; without git,
# everything but build directories) into a temporary directory, puts
# packaging/debian at its top as debian/, and runs
# `dpkg-buildpackage -us -uc -b` there. The .deb, .changes and .buildinfo
# files land in OUTDIR. DEB_BUILD_OPTIONS defaults to "nocheck parallel=2":
# the test suite runs in CI, not twice; set it to run the tests in the build.
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

for tool in dpkg-buildpackage dh tar; do
	command -v "$tool" >/dev/null || {
		echo "$0: $tool not found (apt-get install dpkg-dev debhelper)" >&2
		exit 1
	}
done

# The version in debian/changelog must be the project's version.
version=$(sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -n 1)
debversion=$(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version)
if [ "$version" != "$debversion" ]; then
	echo "$0: meson.build says $version but packaging/debian/changelog says $debversion" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/sigil-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
tree="$work/sigil-$version"
mkdir "$tree"

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		(cd "$src" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh) |
		tar -C "$src" -cf - --no-recursion -T - | tar -C "$tree" -xf -
else
	tar -C "$src" -cf - --exclude='./build*' --exclude='./debian' . | tar -C "$tree" -xf -
fi
rm -rf "$tree/debian"
cp -R "$src/packaging/debian" "$tree/debian"

(
	cd "$tree"
	DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-nocheck parallel=2}
	export DEB_BUILD_OPTIONS
	dpkg-buildpackage -us -uc -b
)

for f in "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo; do
	[ -e "$f" ] && cp "$f" "$out/"
done
ls "$out"/*.deb
