/* SPDX-License-Identifier: MIT */
/*
 * agent-msg.c - ssh-agent wire format: bounds-checked parsing, encoding
 */
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "agent-msg.h"

uint8_t agent_get_u8(AgentIn *in)
{
	uint8_t v;

	if (in->bad || in->n < 1) {
		in->bad = true;
		return 0;
	}
	v = in->p[0];
	in->p++;
	in->n--;
	return v;
}

uint32_t agent_get_u32(AgentIn *in)
{
	uint32_t v;

	if (in->bad || in->n < 4) {
		in->bad = true;
		return 0;
	}
	v = (uint32_t)in->p[0] << 24 | (uint32_t)in->p[1] << 16 | (uint32_t)in->p[2] << 8 | in->p[3];
	in->p += 4;
	in->n -= 4;
	return v;
}

const uint8_t *agent_get_string(AgentIn *in, size_t *len)
{
	uint32_t n = agent_get_u32(in);
	const uint8_t *s;

	*len = 0;
	if (in->bad || n > in->n) {
		in->bad = true;
		return NULL;
	}
	s = in->p;
	in->p += n;
	in->n -= n;
	*len = n;
	return s;
}

bool agent_string_is(const uint8_t *s, size_t len, const char *name)
{
	size_t n = strlen(name);

	return s && len == n && memcmp(s, name, n) == 0;
}

int agent_parse_ed25519_blob(const uint8_t *blob, size_t len, uint8_t pk[32])
{
	AgentIn in = { blob, len, false };
	const uint8_t *type, *k;
	size_t tlen, klen;

	type = agent_get_string(&in, &tlen);
	k = agent_get_string(&in, &klen);
	if (in.bad || in.n != 0 || !agent_string_is(type, tlen, "ssh-ed25519") || klen != 32)
		return -1;
	memcpy(pk, k, 32);
	return 0;
}

int agent_parse_ed25519_sig(const uint8_t *blob, size_t len, uint8_t sig[64])
{
	AgentIn in = { blob, len, false };
	const uint8_t *type, *s;
	size_t tlen, slen;

	type = agent_get_string(&in, &tlen);
	s = agent_get_string(&in, &slen);
	if (in.bad || in.n != 0 || !agent_string_is(type, tlen, "ssh-ed25519") || slen != 64)
		return -1;
	memcpy(sig, s, 64);
	return 0;
}

static bool agent_reserve(AgentOut *o, size_t add)
{
	size_t cap;
	uint8_t *p;

	if (o->oom)
		return false;
	if (o->len + add <= o->cap)
		return true;
	cap = o->cap ? o->cap : 256;
	while (cap < o->len + add)
		cap *= 2;
	/* not realloc: the old buffer may hold secrets and is wiped */
	p = malloc(cap);
	if (!p) {
		o->oom = true;
		return false;
	}
	if (o->len)
		memcpy(p, o->data, o->len);
	if (o->data) {
		sigil_wipe(o->data, o->cap);
		free(o->data);
	}
	o->data = p;
	o->cap = cap;
	return true;
}

void agent_put_u8(AgentOut *o, uint8_t v)
{
	if (agent_reserve(o, 1))
		o->data[o->len++] = v;
}

void agent_put_u32(AgentOut *o, uint32_t v)
{
	if (!agent_reserve(o, 4))
		return;
	o->data[o->len++] = (uint8_t)(v >> 24);
	o->data[o->len++] = (uint8_t)(v >> 16);
	o->data[o->len++] = (uint8_t)(v >> 8);
	o->data[o->len++] = (uint8_t)v;
}

void agent_put_string(AgentOut *o, const void *s, size_t len)
{
	agent_put_u32(o, (uint32_t)len);
	if (len && agent_reserve(o, len)) {
		memcpy(o->data + o->len, s, len);
		o->len += len;
	}
}

void agent_put_raw(AgentOut *o, const void *s, size_t len)
{
	if (len && agent_reserve(o, len)) {
		memcpy(o->data + o->len, s, len);
		o->len += len;
	}
}

void agent_put_cstring(AgentOut *o, const char *s)
{
	agent_put_string(o, s, strlen(s));
}

void agent_put_ed25519_blob(AgentOut *o, const uint8_t pk[32])
{
	agent_put_u32(o, 4 + 11 + 4 + 32);
	agent_put_cstring(o, "ssh-ed25519");
	agent_put_string(o, pk, 32);
}

void agent_out_free(AgentOut *o)
{
	if (o->data) {
		sigil_wipe(o->data, o->cap);
		free(o->data);
	}
	o->data = NULL;
	o->len = o->cap = 0;
}
