#!/bin/bash
# SPDX-License-Identifier: MIT
# check-sha512-asm.sh PYTHON GENERATOR ASM_FILE OBJDUMP ARCHIVE
#
# The generated SHA-512 block function crypto/asm/amd64/sha512_avx2.S is
# (1) what its generator writes today and, in the object code of the
# archive, (2) sha512_blocks_avx2 is there, (3) its jumps are exactly the
# fourteen of the generator's control flow, all on public values (the block
# count, the cursors): je x4, jmp x5, jne x5 as objdump
# spells them, and no call, and (4) no memory operand has an index register
# (every address is the input, state or stack pointer, a cursor stepped by
# constants, or rip, plus a constant; LEA computes sums, it reads no
# memory). With ctgrind (which runs this code) this is the constant-time
# evidence for it. TAP output.
set -u
python=$1 gen=$2 asm=$3 objdump=$4 archive=$5
func=sha512_blocks_avx2
echo "1..4"

if "$python" "$gen" --check "$asm"; then
	echo "ok 1 - $asm is the output of $gen"
else
	echo "not ok 1 - $asm differs from the output of $gen"
fi

dis=$("$objdump" -d --no-show-raw-insn -M intel "$archive") || { echo "Bail out! objdump failed"; exit 1; }
body=$(printf '%s\n' "$dis" | awk -v f="$func" '
	/^[0-9a-f]+ <[^>]+>:$/ { name = $2; gsub(/[<>:]/, "", name); cur = (name == f); next }
	/^$/ { cur = 0; next }
	cur && /^ *[0-9a-f]+:/ { sub(/^ *[0-9a-f]+:[ \t]*/, ""); print }')

n=$(printf '%s\n' "$body" | grep -c .)
if [ "$n" -ge 1000 ]; then
	echo "ok 2 - $func found ($n instructions)"
else
	echo "not ok 2 - $func missing or too short in $archive ($n instructions)"
fi

jumps=$(printf '%s\n' "$body" | awk '{ m = $1 } m ~ /^(j[a-z]*|loop[a-z]*|call|jrcxz|jecxz)$/ { print m }' | sort | tr '\n' ' ')
want="je je je je jmp jmp jmp jmp jmp jne jne jne jne jne "
if [ "$jumps" = "$want" ]; then
	echo "ok 3 - the only jumps are the fourteen on public values ($jumps)"
else
	echo "not ok 3 - expected exactly $want, found: $jumps"
fi

indexed=$(printf '%s\n' "$body" | grep -vE '^lea ' | grep -E '\[[a-z0-9]+[+-][a-z][a-z0-9]*([]+*-]|$)|\[[^]]*\*' | grep -vE '\[rip[+-]' | grep -vE '(^| )nop')
if [ -z "$indexed" ]; then
	echo "ok 4 - every memory operand is a register plus a constant"
else
	echo "not ok 4 - indexed memory operands found:"
	printf '%s\n' "$indexed" | sed 's/^/# /'
fi
