#!/bin/bash
# SPDX-License-Identifier: MIT
# check-sha512-asm.sh PYTHON GENERATOR ASM_FILE OBJDUMP ARCHIVE
#
# The generated SHA-512 block functions in crypto/asm/amd64/sha512_avx2.S
# (sha512_blocks_avx2, and sha512_blocks_avx512: the same with its message
# schedule in AVX-512VL) are (1) what their generator writes today and, in
# the object code of the archive, for each function: (2) it is there, (3)
# its jumps are exactly the fourteen of the generator's control flow, all
# on public values (the block count, the cursors): je x4, jmp x5, jne x5
# as objdump spells them, and no call, and (4) no memory operand has an
# index register (every address is the input, state or stack pointer, a
# cursor stepped by constants, or rip, plus a constant; LEA computes sums,
# it reads no memory). Then (5) with their vector instructions left out,
# the two functions are the same instructions with the same jumps (each
# jump goes to the same place in both): the AVX-512 one differs only in
# the vector schedule, and (6) its vector instructions are all of the
# list below, none of which has a data-dependent time or address. With
# ctgrind, which runs the AVX2 function (Valgrind 3.19 cannot run AVX-512
# code, tests/ct/ctgrind.c), this is the constant-time evidence for both.
# TAP output.
set -u
python=$1 gen=$2 asm=$3 objdump=$4 archive=$5
funcs="sha512_blocks_avx2 sha512_blocks_avx512"
vector_ok="vinserti128 vmovdqa vmovdqu vpaddq vpalignr vprorq vpshufb vpsrlq vpsllq vpternlogq vpxor vzeroall"
echo "1..9"

if "$python" "$gen" --check "$asm"; then
	echo "ok 1 - $asm is the output of $gen"
else
	echo "not ok 1 - $asm differs from the output of $gen"
fi

# every function's instructions, "name<TAB>address<TAB>instruction"
# (objbodies.py: the object-code checks' one reader of objdump)
dis=$("$python" "$(dirname "$0")/objbodies.py" "$objdump" "$archive" --intel $funcs) ||
	{ echo "Bail out! objdump failed"; exit 1; }
# one function's instructions as "address<TAB>instruction"
body_of() {
	printf '%s\n' "$dis" | awk -F'\t' -v f="$1" '$1 == f { print $2 "\t" $3 }'
}

t=1
for func in $funcs; do
	body=$(body_of "$func" | cut -f2)
	n=$(printf '%s\n' "$body" | grep -c .)
	t=$((t + 1))
	if [ "$n" -ge 1000 ]; then
		echo "ok $t - $func found ($n instructions)"
	else
		echo "not ok $t - $func missing or too short in $archive ($n instructions)"
	fi

	jumps=$(printf '%s\n' "$body" | awk '{ m = $1 } m ~ /^(j[a-z]*|loop[a-z]*|call|jrcxz|jecxz)$/ { print m }' | sort | tr '\n' ' ')
	want="je je je je jmp jmp jmp jmp jmp jne jne jne jne jne "
	t=$((t + 1))
	if [ "$jumps" = "$want" ]; then
		echo "ok $t - $func: the only jumps are the fourteen on public values ($jumps)"
	else
		echo "not ok $t - $func: expected exactly $want, found: $jumps"
	fi

	indexed=$(printf '%s\n' "$body" | grep -vE '^lea ' | grep -E '\[[a-z0-9]+[+-][a-z][a-z0-9]*([]+*-]|$)|\[[^]]*\*' | grep -vE '\[rip[+-]' | grep -vE '(^| )nop')
	t=$((t + 1))
	if [ -z "$indexed" ]; then
		echo "ok $t - $func: every memory operand is a register plus a constant"
	else
		echo "not ok $t - $func: indexed memory operands found:"
		printf '%s\n' "$indexed" | sed 's/^/# /'
	fi
done

# (5): the scalar instructions of each, jumps as the index of the scalar
# instruction they land on (the first at or after the target), comments
# and alignment padding dropped
scalar() {
	body_of "$1" | "$python" -c '
import re, sys
rows = [l.rstrip("\n").split("\t", 1) for l in sys.stdin if "\t" in l]
rows = [(int(a, 16), i.strip()) for a, i in rows]
pad = re.compile(r"(^|\s)nop(\s|$)|^xchg\s+ax,ax$")  # alignment padding
scal = [(a, i) for a, i in rows if not i.startswith("v") and not pad.search(i)]
addrs = [a for a, _ in scal]
for a, i in scal:
    i = i.split("#")[0].strip()
    m = re.match(r"(j[a-z]+)\s+([0-9a-f]+) <", i)
    if m:
        tgt = int(m.group(2), 16)
        i = "%s -> %d" % (m.group(1), next((k for k, x in enumerate(addrs) if x >= tgt), len(addrs)))
    print(re.sub(r"\s+", " ", i))
'
}
s2=$(scalar sha512_blocks_avx2)
s5=$(scalar sha512_blocks_avx512)
t=$((t + 1))
if [ -n "$s2" ] && [ "$s2" = "$s5" ]; then
	echo "ok $t - without their vector instructions the two functions are the same ($(printf '%s\n' "$s2" | grep -c .) scalar instructions, the same jumps)"
else
	echo "not ok $t - the two functions differ outside their vector instructions:"
	diff <(printf '%s\n' "$s2") <(printf '%s\n' "$s5") | head -20 | sed 's/^/# /'
fi

# (6)
vec=$(body_of sha512_blocks_avx512 | cut -f2 | awk '$1 ~ /^v/ { print $1 }' | sort -u)
bad=""
for m in $vec; do
	case " $vector_ok " in *" $m "*) ;; *) bad="$bad $m" ;; esac
done
t=$((t + 1))
if [ -n "$vec" ] && [ -z "$bad" ]; then
	echo "ok $t - sha512_blocks_avx512's vector instructions are all fixed-time ones ($(echo $vec))"
else
	echo "not ok $t - sha512_blocks_avx512 has other vector instructions:$bad"
fi
