/* SPDX-License-Identifier: MIT */
/*
 * sha512-abi.S - call a block function with every callee-saved register of
 * the SysV amd64 ABI (rbx, rbp, r12..r15) set to a known value, and report
 * which of them, and whether rsp, came back changed (BoringSSL CHECK_ABI,
 * for one routine).
 *
 *   unsigned abi_check_call(sha512_blocks_fn *fn, uint64_t state[8],
 *                           const uint8_t *in, size_t nblocks);
 *   returns a bit mask: bit 0 rbx, 1 rbp, 2 r12, 3 r13, 4 r14, 5 r15, 6 rsp.
 */
	.intel_syntax noprefix
	.text
	.globl	abi_check_call
	.type	abi_check_call, @function
	.p2align 4
abi_check_call:
	.cfi_startproc
	endbr64
	push	rbx
	push	rbp
	push	r12
	push	r13
	push	r14
	push	r15
	sub	rsp, 24			/* 6 pushes + return address + 24 = 80: rsp stays 16-aligned */
	mov	qword ptr [rsp + 8], rsp	/* rsp before the call */
	mov	rax, rdi		/* fn */
	mov	rdi, rsi		/* state */
	mov	rsi, rdx		/* in */
	mov	rdx, rcx		/* nblocks */
	movabs	rbx, 0x0123456789abcdef
	movabs	rbp, 0x1b2c3d4e5f607182
	movabs	r12, 0x2c3d4e5f60718293
	movabs	r13, 0x3d4e5f60718293a4
	movabs	r14, 0x4e5f60718293a4b5
	movabs	r15, 0x5f60718293a4b5c6
	call	rax
	xor	eax, eax
	movabs	rcx, 0x0123456789abcdef
	cmp	rbx, rcx
	je	1f
	or	eax, 1
1:	movabs	rcx, 0x1b2c3d4e5f607182
	cmp	rbp, rcx
	je	1f
	or	eax, 2
1:	movabs	rcx, 0x2c3d4e5f60718293
	cmp	r12, rcx
	je	1f
	or	eax, 4
1:	movabs	rcx, 0x3d4e5f60718293a4
	cmp	r13, rcx
	je	1f
	or	eax, 8
1:	movabs	rcx, 0x4e5f60718293a4b5
	cmp	r14, rcx
	je	1f
	or	eax, 16
1:	movabs	rcx, 0x5f60718293a4b5c6
	cmp	r15, rcx
	je	1f
	or	eax, 32
1:	cmp	rsp, qword ptr [rsp + 8]
	je	1f
	or	eax, 64
1:	add	rsp, 24
	pop	r15
	pop	r14
	pop	r13
	pop	r12
	pop	rbp
	pop	rbx
	ret
	.cfi_endproc
	.size	abi_check_call, .-abi_check_call
	.section .note.GNU-stack, "", @progbits
