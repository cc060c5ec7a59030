/* SPDX-License-Identifier: MIT */
/*
 * age-ops.h - sigild's age methods: age.unwrap, key.export_wrapped,
 * key.import_wrapped (docs/age.md, docs/protocol.md)
 *
 * Called from handler.c's dispatch on the loop thread; each does the
 * checks that dh and key.export do (lock, key type, the key's policy),
 * writes one audit line and answers, except that a key.import_wrapped
 * whose file opens becomes a key.import of the key it carries (the caller
 * then stores it like any imported key).
 */
#ifndef SIGIL_DAEMON_AGE_OPS_H
#define SIGIL_DAEMON_AGE_OPS_H

#include "server.h"

/* age.unwrap: X25519 with the key, HKDF, ChaCha20-Poly1305 open; answered */
void age_ops_unwrap(Conn *c, Request *rq);
/* key.export_wrapped: the key as an age file for a recipient; answered */
void age_ops_export_wrapped(Conn *c, Request *rq);
/**
 * age_ops_import_wrapped() - open the file of a key.import_wrapped.
 * Return: 0 when rq was rewritten as a key.import (method, type, label,
 * seed, exportable, policy: the seed and policy live in rq->age until
 * age_ops_clear()); -1 when it was answered (refused or failed).
 */
int age_ops_import_wrapped(Conn *c, Request *rq);
/* wipe and free what age_ops_import_wrapped() left in rq */
void age_ops_clear(Request *rq);

#endif /* SIGIL_DAEMON_AGE_OPS_H */
