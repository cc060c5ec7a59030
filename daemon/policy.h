/* SPDX-License-Identifier: MIT */
/*
 * policy.h - per-key policy: operations, expiry, peer uids/gids,
 * executables, a sign-count limit and a rate limit (docs/security.md)
 *
 * The policy is set when a key is generated or imported and stored in the
 * key file's header, which is authenticated by the seal: changing it on
 * disk makes the file refuse to open.
 */
#ifndef SIGIL_DAEMON_POLICY_H
#define SIGIL_DAEMON_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

/*
 * The usage counters of one key. signs survives restarts for a key with a
 * max_signs rule, by reservation: before an operation that would pass
 * @reserved, policy_check() calls @persist with a new reservation, the
 * count plus a block (policy_reserve_block(): max_signs / 64, at least 1:
 * at most about 64 fdatasyncs over the key's life, plus one per start),
 * and refuses the operation if that fails. keystore.c writes and
 * fdatasyncs it, reads it back as both signs and reserved at start, and
 * writes the exact count at a clean stop. So a crash can only lose uses
 * that were never released (at most a block), never give back spent ones.
 * The rate window restarts with sigild. A copy of a PolicyUse (self != the
 * copy) is never persisted.
 */
typedef struct PolicyUse {
	uint64_t signs;         /* operations allowed so far */
	uint64_t reserved;      /* the count on disk (persist) */
	uint64_t window_ms;     /* start of the current rate window */
	uint32_t window_count;  /* operations allowed in it */
	int (*persist)(void *ctx, const struct PolicyUse *use, uint64_t signs); /* 0 or -errno */
	void *ctx;
	const struct PolicyUse *self; /* the PolicyUse persist is for */
} PolicyUse;

typedef struct PolicyPeer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	const char *exe;
} PolicyPeer;

/* the uses one reservation adds for a max_signs limit */
uint64_t policy_reserve_block(uint64_t max_signs);

/**
 * policy_encode() - the key file form of @p (empty when !p->set).
 * Return: the number of bytes written, or -ENOSPC if @cap is too small.
 */
int policy_encode(uint8_t *out, size_t cap, const ProtoKeyPolicy *p);
/* parse what policy_encode() wrote. Return: 0 or -EINVAL */
int policy_decode(ProtoKeyPolicy *p, const uint8_t *in, size_t len);

/**
 * policy_check() - may @peer use a key with policy @p for @op now?
 * @op:     PROTO_OP_SIGN or PROTO_OP_DH; 0 for key.export (the ops rule
 *          and the counters do not apply; expires, peers and exes do)
 * @now_s:  unix time; @now_ms: a monotonic clock for the rate window
 * @why:    on refusal, which rule refused and why
 * Counts nothing: the operations core charges the use with
 * policy_charge() only when the operation is performed.
 * Return: true if allowed.
 */
bool policy_check(const ProtoKeyPolicy *p, const PolicyUse *use, unsigned op, const PolicyPeer *peer, int64_t now_s,
                  uint64_t now_ms, char *why, size_t why_len);

/**
 * policy_charge() - count one performed operation in @use (max_signs, with
 * its durable reservation, and the rate window). Checks the counters again
 * (they may have moved since policy_check()).
 * Return: true, or false with @why set (the limit is reached, or the
 * reservation could not be recorded).
 */
bool policy_charge(const ProtoKeyPolicy *p, PolicyUse *use, uint64_t now_ms, char *why, size_t why_len);

#endif /* SIGIL_DAEMON_POLICY_H */
