/* SPDX-License-Identifier: MIT */
/*
 * asm.h - boilerplate shared by the assembly files of crypto/asm (included
 * by .S files only; the C preprocessor runs on them).
 *
 *   SIGIL_FUNC(name)      global, hidden (never exported from the shared
 *                         library), typed as a function, 32-byte aligned,
 *                         starts a CFI procedure and, on amd64, an endbr64
 *                         landing pad (CET indirect-branch tracking; the
 *                         routines are called through function pointers).
 *   SIGIL_ENDFUNC(name)   ends the CFI procedure and sets the symbol size.
 *   SIGIL_ASM_NOTES       the empty .note.GNU-stack section: the stack is
 *                         not executable (and, on amd64, the IBT/SHSTK
 *                         property note so that CET stays enabled).
 */
#ifndef SIGIL_ASM_H
#define SIGIL_ASM_H

#if defined(__x86_64__)
#define SIGIL_LANDING_PAD endbr64
#else
#define SIGIL_LANDING_PAD
#endif

#define SIGIL_FUNC(name)                \
	.text;                          \
	.globl name;                    \
	.hidden name;                   \
	.type name, @function;          \
	.balign 32;                     \
	name:                           \
	.cfi_startproc;                 \
	SIGIL_LANDING_PAD

#define SIGIL_ENDFUNC(name)             \
	.cfi_endproc;                   \
	.size name, .-name

#if defined(__x86_64__)
/* GNU property note: IBT (bit 0) and SHSTK (bit 1) of
 * GNU_PROPERTY_X86_FEATURE_1_AND. Every function starts with endbr64 and
 * returns with a plain ret, so both hold. */
#define SIGIL_ASM_NOTES                                          \
	.section .note.GNU-stack, "", @progbits;                 \
	.section .note.gnu.property, "a";                        \
	.p2align 3;                                              \
	.long 4;                                                 \
	.long 16;                                                \
	.long 5;                                                 \
	.asciz "GNU";                                            \
	.long 0xc0000002;                                        \
	.long 4;                                                 \
	.long 3;                                                 \
	.p2align 3;                                              \
	.text
#else
#define SIGIL_ASM_NOTES .section .note.GNU-stack, "", %progbits; .text
#endif

#endif /* SIGIL_ASM_H */
