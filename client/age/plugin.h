/* SPDX-License-Identifier: MIT */
/*
 * plugin.h - age-plugin-sigil's identity-v1 state machine (C2SP
 * age-plugin), apart from its transport so that the fuzzer can drive it
 *
 * Phase 1 (age -> plugin): plugin_phase1_feed() takes the bytes age wrote
 * and keeps the identities (AGE-PLUGIN-SIGIL-1..., the Bech32 of a sigild
 * key label) and the X25519 stanzas; unknown commands (grease) and
 * stanzas of other types are ignored. Phase 2 (plugin -> age):
 * plugin_phase2() asks sigild (age.unwrap) for each X25519 stanza and
 * answers file-key or error commands through the Ipc callbacks.
 */
#ifndef SIGIL_CLIENT_AGE_PLUGIN_H
#define SIGIL_CLIENT_AGE_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sigil/client.h>

#define PLUGIN_IDENTITIES_MAX 64
#define PLUGIN_STANZAS_MAX 4096

typedef struct PluginIdentity {
	char label[SIGIL_CLIENT_LABEL_MAX + 1];
	bool valid;     /* a well-formed AGE-PLUGIN-SIGIL-1 of a label */
	bool dead;      /* refused by sigild: not tried again */
} PluginIdentity;

typedef struct PluginStanza {
	uint64_t file;        /* FILE_INDEX */
	size_t index;         /* STANZA_INDEX: its position among the file's stanzas */
	bool x25519;
	bool valid;           /* x25519: one share argument of 32 bytes, a 32-byte body */
	uint8_t share[32];
	uint8_t body[32];
} PluginStanza;

typedef struct Plugin {
	PluginIdentity ids[PLUGIN_IDENTITIES_MAX];
	size_t n_ids;
	PluginStanza *stanzas;
	size_t n_stanzas;
	bool done;            /* phase 1 ended */
	const char *internal; /* a phase 1 error that is no one identity's or stanza's (static text) */
} Plugin;

#define PLUGIN_NULL(_x) { .n_ids = 0, .stanzas = NULL, .n_stanzas = 0, .done = false, .internal = NULL }

void plugin_deinit(Plugin *p);

/**
 * plugin_phase1_feed() - consume the complete stanzas at the start of @in.
 * @usedp: the bytes taken (keep the rest and feed it again with more)
 * Return: 1 when "done" was read (phase 1 is over), 0 for more input,
 * -EINVAL when the bytes are not stanzas (the IPC is broken), -ENOMEM.
 */
int plugin_phase1_feed(Plugin *p, const uint8_t *in, size_t len, size_t *usedp);

/* The transport of phase 2: send one command, and read age's answer. */
typedef struct PluginIpc {
	/* 0, or -1 when age is gone */
	int (*send)(void *ctx, const char *const *args, size_t n_args, const uint8_t *body, size_t body_len);
	/* reads one stanza and returns its command in @cmd (NUL-terminated): 0 or -1 */
	int (*recv)(void *ctx, char *cmd, size_t cap);
	void *ctx;
} PluginIpc;

/* Opens a connection to sigild: 0 or the error (its message in *cp if *cp) */
typedef sigil_error (*PluginConnect)(sigil_client **cp);

/**
 * plugin_phase2() - unwrap what phase 1 collected and answer age.
 * Return: 0 when "done" was sent, -1 when age went away.
 */
int plugin_phase2(Plugin *p, const PluginIpc *ipc, PluginConnect connect);

#endif /* SIGIL_CLIENT_AGE_PLUGIN_H */
