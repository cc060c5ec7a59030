#!/bin/bash
# SPDX-License-Identifier: MIT
# check-asm-arm64.sh PYTHON GENERATOR ASM_FILE OBJDUMP ARCHIVE
#
# The generated AArch64 assembly of crypto/asm/arm64 is (1) what its
# generator writes today and, in the object code of the archive (OBJDUMP an
# objdump that reads AArch64: aarch64-linux-gnu-objdump in a cross build),
# (2) every routine is there, (3) has no branch or call at all but the
# final ret (straight-line: no branch can depend on a secret; the one
# exception is fe64_sq_n_arm64's loop on its public count, exactly one
# b.ne), (4) every memory operand is a base register plus a constant (no
# register offset or index: no secret-indexed load or store), (5) no
# division (UDIV/SDIV take data-dependent time) and (6) only the
# instructions the generator means to use (those of Armv8.4-DIT's list of
# data-independent-timing instructions, plus the branches of (3) and the
# nop padding between routines). ctgrind cannot run under
# qemu-user, so this check stands for it on this code. TAP output.
set -u
python=$1 gen=$2 asm=$3 objdump=$4 archive=$5
funcs="fe64_mul_arm64 fe64_sq_arm64 fe64_sq_n_arm64 fe64_ladder_step_arm64"
funcs="$funcs ge64_p1p1_to_p2_arm64 ge64_p1p1_to_p3_arm64 ge64_p2_dbl_arm64"
funcs="$funcs ge64_madd_arm64 ge64_msub_arm64 ge64_add_arm64 ge64_sub_arm64"
echo "1..6"

if "$python" "$gen" --check "$asm"; then
	echo "ok 1 - $asm is the output of $gen"
else
	echo "not ok 1 - $asm differs from the output of $gen"
fi

# The bodies of the routines, one "name<TAB>instruction" per line (the
# "// comment" objdump appends removed; objbodies.py: the object-code
# checks' one reader of objdump), from an objdump that reads AArch64.
raw=$("$python" "$(dirname "$0")/objbodies.py" "$objdump" "$archive" --format elf64-littleaarch64 $funcs) ||
	{ echo "Bail out! objdump failed on $archive or it is not AArch64 object code"; exit 1; }
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

# Every branch, call and return; then take out one ret per routine (its
# last instruction before the nop padding) and the b.ne of fe64_sq_n_arm64.
branches=$(printf '%s\n' "$bodies" | awk -F'\t' '{ split($2, w, /[ \t]+/); m = w[1] }
	m ~ /^(b|bl|br|blr|b\.[a-z]+|bc\.[a-z]+|cbz|cbnz|tbz|tbnz|ret|reta[ab]|bra[a-z]*|blra[a-z]*|eret[a-z]*)$/ { print }')
bad=""
for f in $funcs; do
	mine=$(printf '%s\n' "$branches" | grep "^$f	" | awk -F'\t' '{ split($2, w, /[ \t]+/); print w[1] }' | sort | tr '\n' ' ')
	last=$(printf '%s\n' "$bodies" | grep "^$f	" | awk -F'\t' '$2 != "nop" { l = $2 } END { print l }')
	want="ret "
	[ "$f" = fe64_sq_n_arm64 ] && want="b.ne ret "
	if [ "$mine" != "$want" ] || [ "$last" != "ret" ]; then
		bad="$bad
$f: branches \"$mine\" (want \"$want\"), last instruction \"$last\""
	fi
done
if [ -z "$bad" ]; then
	echo "ok 3 - no branch or call in the assembly routines but the final ret (and fe64_sq_n_arm64's public-count b.ne)"
else
	echo "not ok 3 - unexpected branches:"
	printf '%s\n' "$bad" | sed '/^$/d; s/^/# /'
fi

# A64 addressing: [xN], [xN, #imm], [xN, #imm]!, [xN], #imm are base plus
# constant; a second register inside the brackets ([xN, xM], [xN, wM,
# sxtw]) or after them (the post-index register form) is an index.
indexed=$(printf '%s\n' "$bodies" | grep -E '\[[a-z0-9]+, *[xw]([0-9]+|zr)|\], *[xw]([0-9]+|zr)')
if [ -z "$indexed" ]; then
	echo "ok 4 - every memory operand is a base register plus a constant"
else
	echo "not ok 4 - register-indexed memory operands found:"
	printf '%s\n' "$indexed" | sed 's/^/# /'
fi

div=$(printf '%s\n' "$bodies" | awk -F'\t' '{ split($2, w, /[ \t]+/) } w[1] ~ /^[us]div$/ { print }')
if [ -z "$div" ]; then
	echo "ok 5 - no division"
else
	echo "not ok 5 - division found:"
	printf '%s\n' "$div" | sed 's/^/# /'
fi

# objdump shows MOVZ as mov and ORR-with-xzr as mov.
allowed=" ldp stp mul umulh add adds adc adcs sub subs sbcs csel mov movz movk ret b.ne nop "
other=$(printf '%s\n' "$bodies" | awk -F'\t' -v ok="$allowed" '{ split($2, w, /[ \t]+/) }
	index(ok, " " w[1] " ") == 0 { print }')
if [ -z "$other" ]; then
	echo "ok 6 - only the expected instructions:$allowed"
else
	echo "not ok 6 - unexpected instructions:"
	printf '%s\n' "$other" | sed 's/^/# /'
fi
