/* SPDX-License-Identifier: MIT */
/*
 * fuzz-age-plugin.c - age-plugin-sigil's stanza parser and identity-v1
 * state machine (client/age/plugin.c, on daemon/agefile.c's stanza codec)
 *
 * The input is what age would write in phase 1. Oracles: the parser
 * returns 1, 0, -EINVAL or -ENOMEM and takes no more than it was given;
 * feeding the input in two pieces (cut where the first byte says) gives
 * the same identities and stanzas as feeding it at once; every identity
 * marked valid holds a label, file indices never go down; when phase 1
 * ends, phase 2 (sigild unreachable) answers only with well-formed error
 * commands and a final done, never a file key.
 */
#include <errno.h>
#include <string.h>

#include "agefile.h"
#include "plugin.h"

#include "fuzz.h"

static int cap_send(void *ctx, const char *const *args, size_t n_args, const uint8_t *body, size_t body_len)
{
	FUZZ_CHECK(agefile_stanza_write(ctx, args, n_args, body, body_len) == 0);
	return 0;
}

static int cap_recv(void *ctx, char *cmd, size_t cap)
{
	(void)ctx;
	snprintf(cmd, cap, "ok");
	return 0;
}

static sigil_error no_sigild(sigil_client **cp)
{
	*cp = NULL;
	return SIGIL_ECONNECT;
}

/* feed all of in, in pieces of at most @first then the rest */
static int feed(Plugin *p, const uint8_t *in, size_t len, size_t first)
{
	size_t used = 0, more = 0;
	int r;

	r = plugin_phase1_feed(p, in, first, &used);
	FUZZ_CHECK(used <= first);
	if (r != 0)
		return r;
	r = plugin_phase1_feed(p, in + used, len - used, &more);
	FUZZ_CHECK(more <= len - used);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Plugin a = PLUGIN_NULL(a), b = PLUGIN_NULL(b);
	int ra, rb;

	ra = feed(&a, data, size, size);
	rb = feed(&b, data, size, size ? data[0] % (size + 1) : 0);
	FUZZ_CHECK(ra == 1 || ra == 0 || ra == -EINVAL || ra == -ENOMEM);
	if (ra != -ENOMEM && rb != -ENOMEM) {
		FUZZ_CHECK(ra == rb);
		FUZZ_CHECK(a.n_ids == b.n_ids && a.n_stanzas == b.n_stanzas && a.done == b.done);
		FUZZ_CHECK((a.internal == NULL) == (b.internal == NULL));
		for (size_t i = 0; i < a.n_ids; i++)
			FUZZ_CHECK(a.ids[i].valid == b.ids[i].valid && strcmp(a.ids[i].label, b.ids[i].label) == 0);
	}
	FUZZ_CHECK(a.n_ids <= PLUGIN_IDENTITIES_MAX && a.n_stanzas <= PLUGIN_STANZAS_MAX);
	for (size_t i = 0; i < a.n_ids; i++)
		FUZZ_CHECK(!a.ids[i].valid || (a.ids[i].label[0] && strlen(a.ids[i].label) <= SIGIL_CLIENT_LABEL_MAX));
	for (size_t i = 1; i < a.n_stanzas; i++)
		FUZZ_CHECK(a.stanzas[i].file >= a.stanzas[i - 1].file);
	if (ra == 1) {
		AgeBuf out = AGEBUF_NULL(out);
		PluginIpc ipc = { cap_send, cap_recv, &out };
		size_t pos = 0;

		FUZZ_CHECK(plugin_phase2(&a, &ipc, no_sigild) == 0);
		/* every answer is a stanza: errors, then done */
		for (;;) {
			AgeStanza s;
			size_t used = 0;

			FUZZ_CHECK(pos < out.len);
			FUZZ_CHECK(agefile_stanza_parse(&s, out.data + pos, out.len - pos, &used) == 0);
			pos += used;
			if (strcmp(s.args[0], "done") == 0) {
				agefile_stanza_deinit(&s);
				break;
			}
			FUZZ_CHECK(strcmp(s.args[0], "error") == 0 && s.n_args >= 2);
			agefile_stanza_deinit(&s);
		}
		FUZZ_CHECK(pos == out.len);
		agefile_buf_deinit(&out);
	}
	plugin_deinit(&a);
	plugin_deinit(&b);
	return 0;
}
