#!/bin/bash
# SPDX-License-Identifier: MIT
# check-asm.sh PYTHON GENERATOR ASM_FILE OBJDUMP ARCHIVE
#
# The generated amd64 assembly of crypto/asm is (1) what its generator
# writes today and, in the object code of the archive, (2) every routine is
# there, (3) has no jump or call at all (straight-line: no conditional jump
# can depend on a secret) and (4) no memory operand with an index register
# (every address is a pointer argument plus a constant: no secret-indexed
# load). Valgrind cannot run this code (it hides ADX), so this check is what
# stands for ctgrind on it. TAP output.
set -u
python=$1 gen=$2 asm=$3 objdump=$4 archive=$5
funcs="fe64_mul_adx fe64_sq_adx fe64_sq_n_adx fe64_ladder_step_adx fe64_ladder_bits_adx"
funcs="$funcs ge64_p1p1_to_p2_adx ge64_p1p1_to_p3_adx"
funcs="$funcs ge64_p2_dbl_adx ge64_madd_adx ge64_msub_adx ge64_add_adx ge64_sub_adx"
funcs="$funcs ge64_madd_scan_adx"
echo "1..4"

if "$python" "$gen" --check "$asm"; then
	echo "ok 1 - $asm is the output of $gen"
else
	echo "not ok 1 - $asm differs from the output of $gen"
fi

# The bodies of the routines, one "name<TAB>instruction" per line
# (objbodies.py: the object-code checks' one reader of objdump).
raw=$("$python" "$(dirname "$0")/objbodies.py" "$objdump" "$archive" --intel $funcs) ||
	{ echo "Bail out! objdump failed"; exit 1; }
bodies=$(printf '%s\n' "$raw" | cut -f1,3)

missing=""
for f in $funcs; do
	n=$(printf '%s\n' "$bodies" | grep -c "^$f	")
	[ "$n" -ge 20 ] || missing="$missing $f"
done
if [ -z "$missing" ]; then
	echo "ok 2 - every routine found ($(echo $funcs | wc -w) routines)"
else
	echo "not ok 2 - missing or too short in $archive:$missing"
fi

# fe64_sq_n_adx is the one exception: its loop on the public count n is
# exactly one je (n = 1) and one jne (the loop back).
jumps=$(printf '%s\n' "$bodies" | awk -F'\t' '{ split($2, w, /[ \t]+/); m = w[1] }
	m ~ /^(j[a-z]*|loop[a-z]*|call|jmp|jrcxz|jecxz)$/ { print }')
loopjumps=$(printf '%s\n' "$jumps" | grep -c '^fe64_sq_n_adx	' || true)
loopok=$(printf '%s\n' "$jumps" | grep '^fe64_sq_n_adx	' | awk -F'\t' '{ split($2, w, /[ \t]+/); print w[1] }' | sort | tr '\n' ' ')
jumps=$(printf '%s\n' "$jumps" | grep -v '^fe64_sq_n_adx	' || true)
if [ "$loopjumps" != 2 ] || [ "$loopok" != "je jne " ]; then
	jumps="$jumps
fe64_sq_n_adx: expected exactly je and jne, found: $loopok"
fi
# fe64_ladder_bits_adx: its loop on the public step count n is one jne.
bitsok=$(printf '%s\n' "$jumps" | grep '^fe64_ladder_bits_adx	' | awk -F'\t' '{ split($2, w, /[ \t]+/); print w[1] }' | tr '\n' ' ')
jumps=$(printf '%s\n' "$jumps" | grep -v '^fe64_ladder_bits_adx	' || true)
if [ "$bitsok" != "jne " ]; then
	jumps="$jumps
fe64_ladder_bits_adx: expected exactly one jne, found: $bitsok"
fi
if [ -z "$jumps" ]; then
	echo "ok 3 - no jump, loop or call in the assembly routines (but the public-count loops of fe64_sq_n_adx and fe64_ladder_bits_adx)"
else
	echo "not ok 3 - jumps found:"
	printf '%s\n' "$jumps" | sed 's/^/# /'
fi

# Intel syntax: [base+index*scale+disp]; an index shows as a second register
# or a "*". rip-relative addresses have no index and are allowed; the nop
# padding between routines (nop WORD PTR [rax+rax*1]) is never executed.
indexed=$(printf '%s\n' "$bodies" | grep -E '\[[a-z0-9]+[+-][a-z][a-z0-9]*([]+*-]|$)|\[[^]]*\*' | grep -vE '\[rip[+-]' | grep -vE '	nop|	(data16 |cs )+nop| nop ')
if [ -z "$indexed" ]; then
	echo "ok 4 - every memory operand is a register plus a constant"
else
	echo "not ok 4 - indexed memory operands found:"
	printf '%s\n' "$indexed" | sed 's/^/# /'
fi
