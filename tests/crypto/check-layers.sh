#!/bin/bash
# SPDX-License-Identifier: MIT
# check-layers.sh CRYPTO_DIR - the layers of crypto/README.md hold: each
# backend in its folder includes nothing above it (ref51/ never names
# fe64/ or asm/; neither backend names the other's table or cpu.c's
# choice), the shared files below both name neither, the table (backend.h)
# is included only by cpu.c, the protocol files and the backends' table
# files, and only cpu.c asks the probes and ed25519.c/x25519.c the table.
# Output is TAP.
set -u
dir=${1:?usage: check-layers.sh CRYPTO_DIR}
cd "$dir" || { echo "Bail out! no $dir"; exit 1; }
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; printf '%s\n' "$2" | sed 's/^/#   /'; }
# check DESCRIPTION OUTPUT: ok when OUTPUT (the offending lines) is empty
check() { if [ -z "$2" ]; then ok "$1"; else notok "$1" "$2"; fi; }
incl() { grep -Hn '^#include "' "$@" 2>/dev/null; }

echo "1..7"
[ -d ref51 ] && [ -d fe64 ] && [ -f backend.h ] ||
	{ echo "Bail out! ref51/, fe64/ or backend.h missing"; exit 1; }
check "ref51/ includes only ref51/, ct.h, wnaf.h (and backend.h in backend51.c)" \
	"$(incl ref51/*.[ch] | grep -v -E '"(ref51/[a-z0-9_]+\.h|ct\.h|wnaf\.h)"' |
	   grep -v -E '^ref51/backend51\.c:[0-9]+:#include "backend\.h"')"
check "fe64/ includes only fe64/, ref51/, ct.h, wnaf.h (and backend.h in backend64.c)" \
	"$(incl fe64/*.[ch] | grep -v -E '"((fe64|ref51)/[a-z0-9_]+\.h|ct\.h|wnaf\.h)"' |
	   grep -v -E '^fe64/backend64\.c:[0-9]+:#include "backend\.h"')"
check "the shared files (sc, sha512, wnaf, util, ct.h) include no backend" \
	"$(incl sc.[ch] sha512.[ch] wnaf.[ch] util.c ct.h | grep -E '"(ref51|fe64|asm)/|"backend\.h"')"
check "backend.h is included by cpu.c, ed25519.c, x25519.c and the two table files only" \
	"$(grep -rln '#include "backend\.h"' --include='*.[ch]' . | sed 's|^\./||' |
	   grep -v -x -E 'cpu\.c|ed25519\.c|x25519\.c|ref51/backend51\.c|fe64/backend64\.c')"
check "the protocol files include no fe64/ header" \
	"$(incl ed25519.c x25519.c | grep '"fe64/')"
check "only cpu.c calls the probes (*_probe())" \
	"$(grep -rn -E '[a-z0-9_]+_probe\(\)' --include='*.c' . | sed 's|^\./||' |
	   grep -v -E '^(cpu\.c|asm/)' )"
check "only cpu.c, ed25519.c and x25519.c call backend_get()" \
	"$(grep -rn 'backend_get()' --include='*.c' . | sed 's|^\./||' |
	   grep -v -E '^(cpu|ed25519|x25519)\.c:')"
exit $fail
