/* SPDX-License-Identifier: MIT */
/*
 * secmem.h - locked memory for secrets
 *
 * Each allocation is its own mapping: guard pages (PROT_NONE) on both
 * sides, the pages between mlock'd and marked MADV_DONTDUMP, and wiped
 * before they are unmapped.
 */
#ifndef SIGIL_DAEMON_SECMEM_H
#define SIGIL_DAEMON_SECMEM_H

#include <stdbool.h>
#include <stddef.h>

/**
 * secmem_setup() - check that memory can be locked.
 * @allow_unlocked: continue (with a warning) if mlock fails
 * Return: 0, or -errno of mlock (the caller refuses to start, naming
 * RLIMIT_MEMLOCK).
 */
int secmem_setup(bool allow_unlocked);

/* zeroed locked memory for n bytes, or NULL (errno set) */
void *secmem_alloc(size_t n);
/* wipe and unmap; NULL is a no-op; returns NULL */
void *secmem_free(void *p);
/* number of live allocations (tests, status) */
size_t secmem_count(void);

#endif /* SIGIL_DAEMON_SECMEM_H */
