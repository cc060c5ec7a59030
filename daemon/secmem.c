/* SPDX-License-Identifier: MIT */
/*
 * secmem.c - locked memory for secrets: mmap'd pages, mlock'd,
 * MADV_DONTDUMP, guard pages on both sides, wiped on release
 *
 * Allocations are made and released on the loop thread or on worker
 * threads; the counter is atomic.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "log.h"
#include "secmem.h"

typedef struct SecmemHeader {
	void *base;      /* the whole mapping, guards included */
	size_t map_len;
	size_t data_len; /* the locked pages between the guards */
	bool locked;
} SecmemHeader;

static bool secmem_allow_unlocked;
static size_t secmem_live;

static size_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096;
}

int secmem_setup(bool allow_unlocked)
{
	size_t ps = page_size();
	void *p;
	int r = 0;

	secmem_allow_unlocked = allow_unlocked;
	p = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return error_origin(-errno);
	if (mlock(p, ps) < 0)
		r = -errno;
	else
		munlock(p, ps);
	munmap(p, ps);
	if (r < 0 && allow_unlocked) {
		log_warn("mlock failed (%s): secrets may be swapped out (--allow-unlocked-memory)", strerror(-r));
		return 0;
	}
	return r;
}

void *secmem_alloc(size_t n)
{
	size_t ps = page_size();
	size_t data_len = (sizeof(SecmemHeader) + n + ps - 1) / ps * ps;
	size_t map_len = data_len + 2 * ps;
	uint8_t *base, *data;
	SecmemHeader *h;
	bool locked = true;

	base = mmap(NULL, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	data = base + ps;
	if (mprotect(data, data_len, PROT_READ | PROT_WRITE) < 0)
		goto fail;
	if (mlock(data, data_len) < 0) {
		if (!secmem_allow_unlocked)
			goto fail;
		locked = false;
	}
	/* best effort: a kernel without MADV_DONTDUMP still has
	 * PR_SET_DUMPABLE 0 and RLIMIT_CORE 0 */
	(void)madvise(base, map_len, MADV_DONTDUMP);
	h = (SecmemHeader *)data;
	h->base = base;
	h->map_len = map_len;
	h->data_len = data_len;
	h->locked = locked;
	__atomic_add_fetch(&secmem_live, 1, __ATOMIC_RELAXED);
	/* the user part starts right after the header, 16-byte aligned */
	return data + ((sizeof(SecmemHeader) + 15) & ~(size_t)15);
fail:
	{
		int e = errno;

		munmap(base, map_len);
		errno = e;
	}
	return NULL;
}

void *secmem_free(void *p)
{
	SecmemHeader *h;
	void *base;
	size_t map_len;

	if (!p)
		return NULL;
	h = (SecmemHeader *)((uint8_t *)p - ((sizeof(SecmemHeader) + 15) & ~(size_t)15));
	base = h->base;
	map_len = h->map_len;
	sigil_wipe(h, h->data_len);
	munmap(base, map_len); /* also unlocks */
	__atomic_sub_fetch(&secmem_live, 1, __ATOMIC_RELAXED);
	return NULL;
}

size_t secmem_count(void)
{
	return __atomic_load_n(&secmem_live, __ATOMIC_RELAXED);
}
