/* SPDX-License-Identifier: MIT */
/*
 * proto-private.h - helpers shared by the files of proto/ (not installed)
 */
#ifndef SIGIL_PROTO_PRIVATE_H
#define SIGIL_PROTO_PRIVATE_H

#include <stddef.h>

#include "proto.h"

/* ProtoSignMode / ProtoPolicy from a wire name, or -1 */
int proto__mode_from_name(const char *s, size_t n);
int proto__policy_from_name(const char *s, size_t n);
/* append n bytes; Return: 0 or -ENOMEM */
int proto__buf_append(ProtoBuf *b, const void *data, size_t n);

#endif /* SIGIL_PROTO_PRIVATE_H */
