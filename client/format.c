/* SPDX-License-Identifier: MIT */
/*
 * format.c - SSHSIG, minisign and signify encoders and parsers
 *
 * Everything here works on public data (public keys, signatures, digests)
 * except format_seed_parse(), which handles seeds: its secret scratch
 * buffers are wiped on every path. Parsing of secret-key files branches on
 * the file's structure (lengths, magic strings), never on the secret bytes,
 * except for the checksum comparison, whose result is public.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "format.h"

/* ---- hex ---- */

void format_hex_encode(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int format_hex_decode(uint8_t *out, size_t outlen, const char *in, size_t inlen)
{
	if (inlen != 2 * outlen)
		return -1;
	for (size_t i = 0; i < inlen; i++)
		if (hex_digit(in[i]) < 0)
			return -1;
	for (size_t i = 0; i < outlen; i++)
		out[i] = (uint8_t)(hex_digit(in[2 * i]) << 4 | hex_digit(in[2 * i + 1]));
	return 0;
}

/* ---- base64 ---- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t format_b64_len(size_t n)
{
	return 4 * ((n + 2) / 3);
}

void format_b64_encode(char *out, const uint8_t *in, size_t n)
{
	size_t o = 0, i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

static int b64_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int format_b64_decode(uint8_t *out, size_t outcap, size_t *outlenp, const char *in, size_t inlen)
{
	uint32_t acc = 0;
	size_t nchars = 0, npad = 0, o = 0;

	for (size_t i = 0; i < inlen; i++) {
		char c = in[i];
		int v;

		if (is_space(c))
			continue;
		if (c == '=') {
			npad++;
			if (npad > 2)
				return -1;
			continue;
		}
		if (npad)
			return -1; /* data after padding */
		v = b64_value(c);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		nchars++;
		if (nchars % 4 == 0) {
			if (o + 3 > outcap)
				return -1;
			out[o++] = (uint8_t)(acc >> 16);
			out[o++] = (uint8_t)(acc >> 8);
			out[o++] = (uint8_t)acc;
			acc = 0;
		}
	}
	switch (nchars % 4) {
	case 0:
		if (npad)
			return -1;
		break;
	case 1:
		return -1;
	case 2:
		if (npad != 2 || o + 1 > outcap || (acc & 0xf))
			return -1;
		out[o++] = (uint8_t)(acc >> 4);
		break;
	case 3:
		if (npad != 1 || o + 2 > outcap || (acc & 0x3))
			return -1;
		out[o++] = (uint8_t)(acc >> 10);
		out[o++] = (uint8_t)(acc >> 2);
		break;
	}
	*outlenp = o;
	return 0;
}

/* ---- small helpers ---- */

void format_keynum(uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t pk[32])
{
	static const char tag[] = "sigil keynum v1";
	uint8_t buf[sizeof(tag) - 1 + 32], h[64];

	memcpy(buf, tag, sizeof(tag) - 1);
	memcpy(buf + sizeof(tag) - 1, pk, 32);
	sigil_sha512(h, buf, sizeof(buf));
	memcpy(keynum, h, FORMAT_KEYNUM_LEN);
}

/* A growable byte buffer for SSH wire encodings. */
typedef struct Wbuf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
} Wbuf;

static void wbuf_put(Wbuf *w, const void *data, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		uint8_t *p;

		while (cap < w->len + n)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->failed = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	if (n)
		memcpy(w->p + w->len, data, n);
	w->len += n;
}

static void wbuf_u32(Wbuf *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	wbuf_put(w, b, 4);
}

/* RFC 4251 "string": uint32 length || bytes */
static void wbuf_string(Wbuf *w, const void *data, size_t n)
{
	wbuf_u32(w, (uint32_t)n);
	wbuf_put(w, data, n);
}

static void wbuf_cstring(Wbuf *w, const char *s)
{
	wbuf_string(w, s, strlen(s));
}

/* A reader over SSH wire encodings. */
typedef struct Rbuf {
	const uint8_t *p;
	size_t len, off;
} Rbuf;

static int rbuf_u32(Rbuf *r, uint32_t *v)
{
	if (r->len - r->off < 4)
		return -1;
	*v = (uint32_t)r->p[r->off] << 24 | (uint32_t)r->p[r->off + 1] << 16 |
	     (uint32_t)r->p[r->off + 2] << 8 | r->p[r->off + 3];
	r->off += 4;
	return 0;
}

static int rbuf_string(Rbuf *r, const uint8_t **data, size_t *n)
{
	uint32_t l;

	if (rbuf_u32(r, &l) < 0 || r->len - r->off < l)
		return -1;
	*data = r->p + r->off;
	*n = l;
	r->off += l;
	return 0;
}

static bool str_eq(const uint8_t *data, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(data, s, n) == 0;
}

static void ssh_pubkey_blob(Wbuf *w, const uint8_t pk[32])
{
	wbuf_cstring(w, "ssh-ed25519");
	wbuf_string(w, pk, 32);
}

/* Parses string "ssh-ed25519" || string pk(32). */
static int ssh_pubkey_blob_parse(const uint8_t *blob, size_t n, uint8_t pk[32])
{
	Rbuf r = { blob, n, 0 };
	const uint8_t *t, *k;
	size_t tn, kn;

	if (rbuf_string(&r, &t, &tn) < 0 || !str_eq(t, tn, "ssh-ed25519") ||
	    rbuf_string(&r, &k, &kn) < 0 || kn != 32 || r.off != r.len)
		return -1;
	memcpy(pk, k, 32);
	return 0;
}

static char *xasprintf_b64(const char *prefix, const uint8_t *data, size_t n, const char *suffix)
{
	size_t bl = format_b64_len(n), pl = strlen(prefix), sl = strlen(suffix);
	char *s = malloc(pl + bl + sl + 1);

	if (!s)
		return NULL;
	memcpy(s, prefix, pl);
	format_b64_encode(s + pl, data, n);
	memcpy(s + pl + bl, suffix, sl + 1);
	return s;
}

/* ---- OpenSSH ---- */

char *format_openssh_pubkey(const uint8_t pk[32], const char *comment)
{
	Wbuf w = { 0 };
	char *s, *suffix;

	ssh_pubkey_blob(&w, pk);
	if (w.failed)
		return NULL;
	if (comment && *comment) {
		if (asprintf(&suffix, " %s\n", comment) < 0)
			suffix = NULL;
	} else {
		suffix = strdup("\n");
	}
	s = suffix ? xasprintf_b64("ssh-ed25519 ", w.p, w.len, suffix) : NULL;
	free(suffix);
	free(w.p);
	return s;
}

char *format_allowed_signers(const char *principal, const char *ns, const uint8_t pk[32])
{
	char *key = format_openssh_pubkey(pk, NULL), *s;
	int r;

	if (!key)
		return NULL;
	if (ns)
		r = asprintf(&s, "%s namespaces=\"%s\" %s", principal, ns, key);
	else
		r = asprintf(&s, "%s %s", principal, key);
	free(key);
	return r < 0 ? NULL : s;
}

#define SSHSIG_MAGIC "SSHSIG"
#define SSHSIG_VERSION 1
#define SSHSIG_BEGIN "-----BEGIN SSH SIGNATURE-----"
#define SSHSIG_END "-----END SSH SIGNATURE-----"

static bool sshsig_hashalg_ok(const char *hashalg, size_t digest_len)
{
	return (strcmp(hashalg, "sha512") == 0 && digest_len == 64) ||
	       (strcmp(hashalg, "sha256") == 0 && digest_len == 32);
}

uint8_t *format_sshsig_signed_data(size_t *lenp, const char *ns, const char *hashalg,
                                   const uint8_t *digest, size_t digest_len)
{
	Wbuf w = { 0 };

	if (!ns || !*ns || strlen(ns) > FORMAT_SSHSIG_NS_MAX || !sshsig_hashalg_ok(hashalg, digest_len))
		return NULL;
	wbuf_put(&w, SSHSIG_MAGIC, 6);
	wbuf_cstring(&w, ns);
	wbuf_string(&w, "", 0); /* reserved */
	wbuf_cstring(&w, hashalg);
	wbuf_string(&w, digest, digest_len);
	if (w.failed) {
		free(w.p);
		return NULL;
	}
	*lenp = w.len;
	return w.p;
}

char *format_sshsig_armor(const uint8_t pk[32], const char *ns, const char *hashalg,
                          const uint8_t sig[64])
{
	Wbuf w = { 0 }, pkb = { 0 }, sigb = { 0 };
	char *b64 = NULL, *out = NULL;
	size_t bl, o = 0;

	if (!ns || !*ns || strlen(ns) > FORMAT_SSHSIG_NS_MAX)
		return NULL;
	ssh_pubkey_blob(&pkb, pk);
	wbuf_cstring(&sigb, "ssh-ed25519");
	wbuf_string(&sigb, sig, 64);
	wbuf_put(&w, SSHSIG_MAGIC, 6);
	wbuf_u32(&w, SSHSIG_VERSION);
	wbuf_string(&w, pkb.p, pkb.len);
	wbuf_cstring(&w, ns);
	wbuf_string(&w, "", 0);
	wbuf_cstring(&w, hashalg);
	wbuf_string(&w, sigb.p, sigb.len);
	if (w.failed || pkb.failed || sigb.failed)
		goto out;
	bl = format_b64_len(w.len);
	b64 = malloc(bl + 1);
	/* armor: lines of 70 base64 characters, as ssh-keygen writes them */
	out = malloc(sizeof(SSHSIG_BEGIN) + bl + bl / 70 + 2 + sizeof(SSHSIG_END) + 1);
	if (!b64 || !out) {
		free(out);
		out = NULL;
		goto out;
	}
	format_b64_encode(b64, w.p, w.len);
	memcpy(out, SSHSIG_BEGIN "\n", sizeof(SSHSIG_BEGIN));
	o = sizeof(SSHSIG_BEGIN);
	for (size_t i = 0; i < bl; i += 70) {
		size_t n = bl - i < 70 ? bl - i : 70;

		memcpy(out + o, b64 + i, n);
		o += n;
		out[o++] = '\n';
	}
	memcpy(out + o, SSHSIG_END "\n", sizeof(SSHSIG_END) + 1);
out:
	free(b64);
	free(w.p);
	free(pkb.p);
	free(sigb.p);
	return out;
}

/* Finds the text between a BEGIN line and an END line. */
static int armor_body(const char *text, size_t len, const char *begin, const char *end,
                      const char **bodyp, size_t *bodylenp)
{
	const char *b = memmem(text, len, begin, strlen(begin)), *e;

	if (!b)
		return -1;
	b += strlen(begin);
	e = memmem(b, len - (size_t)(b - text), end, strlen(end));
	if (!e)
		return -1;
	*bodyp = b;
	*bodylenp = (size_t)(e - b);
	return 0;
}

int format_sshsig_parse(FormatSshsig *out, const char *text, size_t len, const char **whyp)
{
	const char *body;
	size_t bodylen, n, fn;
	uint8_t *blob = NULL;
	const uint8_t *f;
	uint32_t version;
	Rbuf r, s;
	FormatSshsig tmp;
	int ret = -1;

	*whyp = "not an armored SSH signature";
	if (armor_body(text, len, SSHSIG_BEGIN, SSHSIG_END, &body, &bodylen) < 0)
		return -1;
	blob = malloc(bodylen);
	if (!blob) {
		*whyp = "out of memory";
		return -1;
	}
	*whyp = "bad base64 in SSH signature";
	if (format_b64_decode(blob, bodylen, &n, body, bodylen) < 0)
		goto out;
	r = (Rbuf){ blob, n, 0 };
	*whyp = "not an SSHSIG blob";
	if (n < 6 || memcmp(blob, SSHSIG_MAGIC, 6) != 0)
		goto out;
	r.off = 6;
	if (rbuf_u32(&r, &version) < 0 || version != SSHSIG_VERSION) {
		*whyp = "unsupported SSHSIG version";
		goto out;
	}
	*whyp = "truncated SSHSIG blob";
	if (rbuf_string(&r, &f, &fn) < 0)
		goto out;
	if (ssh_pubkey_blob_parse(f, fn, tmp.pk) < 0) {
		*whyp = "SSH signature is not made with an ssh-ed25519 key";
		goto out;
	}
	if (rbuf_string(&r, &f, &fn) < 0)
		goto out;
	if (fn == 0 || fn > FORMAT_SSHSIG_NS_MAX || memchr(f, 0, fn)) {
		*whyp = "bad namespace in SSH signature";
		goto out;
	}
	memcpy(tmp.ns, f, fn);
	tmp.ns[fn] = '\0';
	if (rbuf_string(&r, &f, &fn) < 0) /* reserved: ignored, as OpenSSH does */
		goto out;
	if (rbuf_string(&r, &f, &fn) < 0)
		goto out;
	if (!str_eq(f, fn, "sha512") && !str_eq(f, fn, "sha256")) {
		*whyp = "unsupported hash algorithm in SSH signature";
		goto out;
	}
	memcpy(tmp.hashalg, f, fn);
	tmp.hashalg[fn] = '\0';
	if (rbuf_string(&r, &f, &fn) < 0)
		goto out;
	if (r.off != r.len) {
		*whyp = "trailing data in SSHSIG blob";
		goto out;
	}
	s = (Rbuf){ f, fn, 0 };
	{
		const uint8_t *t, *sg;
		size_t tn, sgn;

		if (rbuf_string(&s, &t, &tn) < 0 || !str_eq(t, tn, "ssh-ed25519") ||
		    rbuf_string(&s, &sg, &sgn) < 0 || sgn != 64 || s.off != s.len) {
			*whyp = "SSH signature is not an ssh-ed25519 signature";
			goto out;
		}
		memcpy(tmp.sig, sg, 64);
	}
	*out = tmp;
	*whyp = NULL;
	ret = 0;
out:
	free(blob);
	return ret;
}

/* ---- minisign and signify ---- */

/* Splits text into lines (LF or CRLF). Returns the number of lines found,
 * up to max; each line excludes its terminator. */
static size_t split_lines(const char *text, size_t len, const char **lines, size_t *lens, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len && n < max) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (text + i)) : len - i;

		lines[n] = text + i;
		lens[n] = l;
		if (l && lines[n][l - 1] == '\r')
			lens[n]--;
		n++;
		i += l + (nl ? 1 : 0);
	}
	return n;
}

static bool has_prefix(const char *line, size_t len, const char *prefix)
{
	size_t pl = strlen(prefix);

	return len >= pl && memcmp(line, prefix, pl) == 0;
}

#define UNTRUSTED "untrusted comment: "
#define TRUSTED "trusted comment: "

static char *keynum_file(const char *comment, const char *alg, const uint8_t keynum[8],
                         const uint8_t *data, size_t n)
{
	uint8_t blob[2 + 8 + 64];
	char *head, *s;

	/* a CR or LF would end the comment line early: the file would not
	 * parse back to the same comment */
	if (strpbrk(comment, "\r\n"))
		return NULL;
	memcpy(blob, alg, 2);
	memcpy(blob + 2, keynum, 8);
	memcpy(blob + 10, data, n);
	if (asprintf(&head, UNTRUSTED "%s\n", comment) < 0)
		return NULL;
	s = xasprintf_b64(head, blob, 10 + n, "\n");
	free(head);
	return s;
}

char *format_minisign_pubkey(const uint8_t pk[32])
{
	uint8_t keynum[8];
	char comment[64];
	uint64_t id = 0;

	format_keynum(keynum, pk);
	/* minisign prints the key id as the little-endian 64-bit number */
	for (int i = 7; i >= 0; i--)
		id = id << 8 | keynum[i];
	snprintf(comment, sizeof(comment), "minisign public key %016llX", (unsigned long long)id);
	return keynum_file(comment, "Ed", keynum, pk, 32);
}

char *format_minisign_sig(const uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t sig[64],
                          const char *untrusted_comment, const char *trusted_comment,
                          const uint8_t global_sig[64])
{
	char *first, *s;
	char gs[89];
	int r;

	/* the trusted comment is signed as the bytes of its line: CR and LF
	 * cannot be written there (the parser refuses a CR, minisign strips
	 * it) */
	if (strpbrk(trusted_comment, "\r\n"))
		return NULL;
	first = keynum_file(untrusted_comment, "ED", keynum, sig, 64);
	if (!first)
		return NULL;
	format_b64_encode(gs, global_sig, 64);
	r = asprintf(&s, "%s" TRUSTED "%s\n%s\n", first, trusted_comment, gs);
	free(first);
	return r < 0 ? NULL : s;
}

/* Decodes the base64 line of a minisign/signify file holding
 * alg(2) || keynum(8) || payload(payload_len). */
static int keynum_line(const char *line, size_t len, uint8_t alg[2], uint8_t keynum[8],
                       uint8_t *payload, size_t payload_len)
{
	uint8_t buf[2 + 8 + 64];
	size_t n;

	if (format_b64_decode(buf, sizeof(buf), &n, line, len) < 0 || n != 10 + payload_len)
		return -1;
	memcpy(alg, buf, 2);
	memcpy(keynum, buf + 2, 8);
	memcpy(payload, buf + 10, payload_len);
	return 0;
}

int format_minisign_parse(FormatMinisign *out, const char *text, size_t len, const char **whyp)
{
	const char *lines[5];
	size_t lens[5], n, gn;
	uint8_t alg[2], gs[64];
	FormatMinisign tmp;

	n = split_lines(text, len, lines, lens, 5);
	if (n < 4 || !has_prefix(lines[0], lens[0], UNTRUSTED) ||
	    !has_prefix(lines[2], lens[2], TRUSTED) || (n == 5 && lens[4] != 0)) {
		*whyp = "not a minisign signature file";
		return -1;
	}
	if (keynum_line(lines[1], lens[1], alg, tmp.keynum, tmp.sig, 64) < 0) {
		*whyp = "bad signature line in minisign file";
		return -1;
	}
	if (memcmp(alg, "ED", 2) == 0) {
		tmp.prehashed = 1;
	} else if (memcmp(alg, "Ed", 2) == 0) {
		tmp.prehashed = 0;
	} else {
		*whyp = "unsupported minisign signature algorithm";
		return -1;
	}
	if (lens[2] - strlen(TRUSTED) > FORMAT_COMMENT_MAX) {
		*whyp = "trusted comment too long";
		return -1;
	}
	/* the global signature covers the exact bytes of the comment: a NUL
	 * would cut the C string that is verified and shown, and a CR left
	 * after the line end cannot be written back (format_minisign_sig) */
	if (memchr(lines[2] + strlen(TRUSTED), '\0', lens[2] - strlen(TRUSTED)) ||
	    memchr(lines[2] + strlen(TRUSTED), '\r', lens[2] - strlen(TRUSTED))) {
		*whyp = "trusted comment contains a NUL or CR byte";
		return -1;
	}
	memcpy(tmp.trusted_comment, lines[2] + strlen(TRUSTED), lens[2] - strlen(TRUSTED));
	tmp.trusted_comment[lens[2] - strlen(TRUSTED)] = '\0';
	if (format_b64_decode(gs, sizeof(gs), &gn, lines[3], lens[3]) < 0 || gn != 64) {
		*whyp = "bad global signature in minisign file";
		return -1;
	}
	memcpy(tmp.global_sig, gs, 64);
	*out = tmp;
	*whyp = NULL;
	return 0;
}

char *format_signify_pubkey(const uint8_t pk[32], const char *comment)
{
	uint8_t keynum[8];

	format_keynum(keynum, pk);
	return keynum_file(comment, "Ed", keynum, pk, 32);
}

char *format_signify_sig(const uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t sig[64],
                         const char *comment)
{
	return keynum_file(comment, "Ed", keynum, sig, 64);
}

int format_signify_parse(FormatSignify *out, const char *text, size_t len, const char **whyp)
{
	const char *lines[3];
	size_t lens[3], n;
	uint8_t alg[2];
	FormatSignify tmp;

	n = split_lines(text, len, lines, lens, 3);
	if (n < 2 || !has_prefix(lines[0], lens[0], UNTRUSTED) || (n == 3 && lens[2] != 0)) {
		*whyp = "not a signify signature file";
		return -1;
	}
	if (keynum_line(lines[1], lens[1], alg, tmp.keynum, tmp.sig, 64) < 0 ||
	    memcmp(alg, "Ed", 2) != 0) {
		*whyp = "bad signature line in signify file";
		return -1;
	}
	*out = tmp;
	*whyp = NULL;
	return 0;
}

/* ---- public keys ---- */

/* Finds "ssh-ed25519 <base64>" in one line and decodes the key. */
static int openssh_line_key(const char *line, size_t len, uint8_t pk[32])
{
	const char *p = memmem(line, len, "ssh-ed25519 ", 12), *b, *e;
	uint8_t blob[64];
	size_t n;

	if (!p)
		return -1;
	b = p + 12;
	while (b < line + len && (*b == ' ' || *b == '\t'))
		b++;
	e = b;
	while (e < line + len && !is_space(*e))
		e++;
	if (format_b64_decode(blob, sizeof(blob), &n, b, (size_t)(e - b)) < 0)
		return -1;
	return ssh_pubkey_blob_parse(blob, n, pk);
}

/* allowed_signers: principals are the first field, a comma-separated list. */
static bool principal_matches(const char *line, size_t len, const char *principal)
{
	size_t end = 0, pl = strlen(principal), start = 0;

	while (end < len && !is_space(line[end]))
		end++;
	for (size_t i = 0; i <= end; i++) {
		if (i == end || line[i] == ',') {
			if (i - start == pl && memcmp(line + start, principal, pl) == 0)
				return true;
			start = i + 1;
		}
	}
	return false;
}

int format_pubkey_parse(FormatPubkey *out, const uint8_t *data, size_t len,
                        const char *principal, const char **whyp)
{
	const char *text = (const char *)data;
	FormatPubkey tmp = { 0 };
	size_t tl = len, n;

	/* raw: exactly 32 bytes that are not all printable hex/base64 text */
	if (len == 32) {
		tmp.kind = FORMAT_PK_RAW;
		memcpy(tmp.pk, data, 32);
		goto ok;
	}
	while (tl && is_space(text[tl - 1]))
		tl--;
	if (tl == 64 && format_hex_decode(tmp.pk, 32, text, 64) == 0) {
		tmp.kind = FORMAT_PK_HEX;
		goto ok;
	}
	if (has_prefix(text, tl, UNTRUSTED)) {
		const char *lines[2];
		size_t lens[2];
		uint8_t alg[2];

		if (split_lines(text, tl, lines, lens, 2) == 2 &&
		    keynum_line(lines[1], lens[1], alg, tmp.keynum, tmp.pk, 32) == 0 &&
		    memcmp(alg, "Ed", 2) == 0) {
			tmp.kind = FORMAT_PK_KEYNUM;
			tmp.has_keynum = 1;
			goto ok;
		}
		*whyp = "bad minisign/signify public key file";
		return -1;
	}
	if (memmem(text, tl, "ssh-ed25519", 11)) {
		size_t i = 0;

		while (i < tl) {
			const char *nl = memchr(text + i, '\n', tl - i);
			size_t l = nl ? (size_t)(nl - (text + i)) : tl - i;
			const char *line = text + i;

			i += l + 1;
			while (l && (*line == ' ' || *line == '\t')) {
				line++;
				l--;
			}
			if (!l || *line == '#')
				continue;
			if (principal && !has_prefix(line, l, "ssh-ed25519") &&
			    !principal_matches(line, l, principal))
				continue;
			if (openssh_line_key(line, l, tmp.pk) == 0) {
				tmp.kind = FORMAT_PK_OPENSSH;
				goto ok;
			}
		}
		*whyp = principal ? "no ssh-ed25519 key for that principal" : "bad ssh-ed25519 public key";
		return -1;
	}
	if (format_b64_decode(tmp.pk, 32, &n, text, tl) == 0 && n == 32) {
		tmp.kind = FORMAT_PK_BASE64;
		goto ok;
	}
	*whyp = "unrecognised public key format";
	return -1;
ok:
	*out = tmp;
	*whyp = NULL;
	return 0;
}

/* ---- secret keys ---- */

/* Secret-bearing text is decoded with libsodium's constant-time decoders
 * (sodium_base642bin, sodium_hex2bin): the table-free arithmetic there does
 * not branch on or index by the characters, unlike the decoders above. */
static int secret_b64_decode(uint8_t *out, size_t outcap, size_t *outlenp, const char *in, size_t inlen)
{
	const char *end;

	if (sodium_base642bin(out, outcap, in, inlen, " \t\r\n", outlenp, &end,
	                      sodium_base64_VARIANT_ORIGINAL) != 0 || end != in + inlen)
		return -1;
	return 0;
}

#define OPENSSH_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define OPENSSH_END "-----END OPENSSH PRIVATE KEY-----"
#define OPENSSH_MAGIC "openssh-key-v1"

/* Checks that seed derives pk (the file's own consistency check). */
static int seed_matches_pk(const uint8_t seed[32], const uint8_t pk[32])
{
	uint8_t cpk[32], csk[64];
	int r;

	sigil_ed25519_keypair_from_seed(cpk, csk, seed);
	sigil_wipe(csk, sizeof(csk));
	r = memcmp(cpk, pk, 32) == 0 ? 0 : -1;
	return r;
}

static int seed_openssh(uint8_t seed[32], const char *text, size_t len, const char **whyp)
{
	const char *body;
	size_t bodylen, n, fn;
	uint8_t *blob;
	const uint8_t *f, *pk, *sk;
	size_t pkn, skn;
	uint32_t nkeys, check1, check2;
	Rbuf r, p;
	int ret = -1;

	*whyp = "not an OpenSSH private key";
	if (armor_body(text, len, OPENSSH_BEGIN, OPENSSH_END, &body, &bodylen) < 0)
		return -1;
	blob = malloc(bodylen ? bodylen : 1);
	if (!blob) {
		*whyp = "out of memory";
		return -1;
	}
	if (secret_b64_decode(blob, bodylen, &n, body, bodylen) < 0)
		goto out;
	if (n < sizeof(OPENSSH_MAGIC) || memcmp(blob, OPENSSH_MAGIC, sizeof(OPENSSH_MAGIC)) != 0)
		goto out;
	r = (Rbuf){ blob, n, sizeof(OPENSSH_MAGIC) };
	*whyp = "truncated OpenSSH private key";
	if (rbuf_string(&r, &f, &fn) < 0)
		goto out;
	if (!str_eq(f, fn, "none")) {
		*whyp = "encrypted OpenSSH private keys are not supported (ssh-keygen -p -N '' removes the passphrase)";
		goto out;
	}
	if (rbuf_string(&r, &f, &fn) < 0 || rbuf_string(&r, &f, &fn) < 0 || rbuf_u32(&r, &nkeys) < 0)
		goto out;
	if (nkeys != 1) {
		*whyp = "OpenSSH private key file holds more than one key";
		goto out;
	}
	if (rbuf_string(&r, &f, &fn) < 0 || rbuf_string(&r, &f, &fn) < 0)
		goto out;
	p = (Rbuf){ f, fn, 0 };
	if (rbuf_u32(&p, &check1) < 0 || rbuf_u32(&p, &check2) < 0)
		goto out;
	if (check1 != check2) {
		*whyp = "OpenSSH private key check bytes differ (wrong passphrase or corrupt file)";
		goto out;
	}
	if (rbuf_string(&p, &f, &fn) < 0)
		goto out;
	if (!str_eq(f, fn, "ssh-ed25519")) {
		*whyp = "OpenSSH private key is not an ssh-ed25519 key";
		goto out;
	}
	if (rbuf_string(&p, &pk, &pkn) < 0 || rbuf_string(&p, &sk, &skn) < 0)
		goto out;
	if (pkn != 32 || skn != 64 || memcmp(sk + 32, pk, 32) != 0 || seed_matches_pk(sk, pk) < 0) {
		*whyp = "inconsistent ssh-ed25519 private key";
		goto out;
	}
	memcpy(seed, sk, 32);
	*whyp = NULL;
	ret = 0;
out:
	sigil_wipe(blob, bodylen ? bodylen : 1);
	free(blob);
	return ret;
}

/* minisign secret key: sig_alg "Ed" || kdf_alg(2) || chk_alg "B2" ||
 * kdf_salt(32) || opslimit(8) || memlimit(8) || keynum(8) || sk(64) || chk(32),
 * chk = BLAKE2b-256(sig_alg || keynum || sk), or all zero in keys that
 * minisign 0.11 -W writes unencrypted. */
#define MINISIGN_SK_LEN (2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32)

static int seed_minisign(uint8_t seed[32], const char *text, size_t len, const char **whyp)
{
	const char *lines[2];
	size_t lens[2], n;
	uint8_t b[MINISIGN_SK_LEN + 3], chk[32], in[2 + 8 + 64];
	int ret = -1;

	*whyp = "not a minisign secret key";
	if (split_lines(text, len, lines, lens, 2) != 2 || !has_prefix(lines[0], lens[0], UNTRUSTED))
		return -1;
	if (secret_b64_decode(b, sizeof(b), &n, lines[1], lens[1]) < 0 || n != MINISIGN_SK_LEN ||
	    memcmp(b, "Ed", 2) != 0)
		goto out;
	if (b[2] != 0 || b[3] != 0) {
		*whyp = "encrypted minisign secret keys are not supported (make one with minisign -G -W)";
		goto out;
	}
	if (memcmp(b + 4, "B2", 2) != 0) {
		*whyp = "unsupported minisign checksum algorithm";
		goto out;
	}
	/* offsets: keynum at 2+2+2+32+8+8 = 54, sk at 62, chk at 126 */
	memcpy(in, b, 2);
	memcpy(in + 2, b + 54, 8 + 64);
	crypto_generichash(chk, sizeof(chk), in, sizeof(in), NULL, 0);
	/* minisign 0.11 leaves chk all zero in unencrypted (-W) keys; the
	 * seed-to-public-key check below still catches a corrupt key */
	if (!sodium_is_zero(b + 126, 32) && memcmp(chk, b + 126, 32) != 0) {
		*whyp = "minisign secret key checksum mismatch";
		goto out;
	}
	if (seed_matches_pk(b + 62, b + 62 + 32) < 0) {
		*whyp = "inconsistent minisign secret key";
		goto out;
	}
	memcpy(seed, b + 62, 32);
	*whyp = NULL;
	ret = 0;
out:
	sigil_wipe(b, sizeof(b));
	sigil_wipe(in, sizeof(in));
	sigil_wipe(chk, sizeof(chk));
	return ret;
}

/* signify secret key: "Ed" || kdfalg "BK" || kdfrounds(4, BE) || salt(16) ||
 * checksum(8) || keynum(8) || seckey(64); checksum = SHA-512(seckey)[0..8]. */
#define SIGNIFY_SK_LEN (2 + 2 + 4 + 16 + 8 + 8 + 64)

static int seed_signify(uint8_t seed[32], const char *text, size_t len, const char **whyp)
{
	const char *lines[2];
	size_t lens[2], n;
	uint8_t b[SIGNIFY_SK_LEN + 3], h[64];
	int ret = -1;

	*whyp = "not a signify secret key";
	if (split_lines(text, len, lines, lens, 2) != 2 || !has_prefix(lines[0], lens[0], UNTRUSTED))
		return -1;
	if (secret_b64_decode(b, sizeof(b), &n, lines[1], lens[1]) < 0 || n != SIGNIFY_SK_LEN ||
	    memcmp(b, "EdBK", 4) != 0)
		goto out;
	if (b[4] | b[5] | b[6] | b[7]) {
		*whyp = "encrypted signify secret keys are not supported (make one with signify -G -n)";
		goto out;
	}
	sigil_sha512(h, b + 40, 64);
	if (memcmp(h, b + 24, 8) != 0) {
		*whyp = "signify secret key checksum mismatch";
		goto out;
	}
	if (seed_matches_pk(b + 40, b + 40 + 32) < 0) {
		*whyp = "inconsistent signify secret key";
		goto out;
	}
	memcpy(seed, b + 40, 32);
	*whyp = NULL;
	ret = 0;
out:
	sigil_wipe(b, sizeof(b));
	sigil_wipe(h, sizeof(h));
	return ret;
}

int format_seed_parse(uint8_t seed[32], FormatSkKind kind, const uint8_t *data, size_t len,
                      const char **whyp)
{
	const char *text = (const char *)data;
	size_t tl = len;

	if (!data || !len) {
		*whyp = "empty secret key";
		return -1;
	}
	while (tl && is_space(text[tl - 1]))
		tl--;
	if (kind == FORMAT_SK_AUTO) {
		if (len == 32)
			kind = FORMAT_SK_RAW;
		else if (tl == 64)
			kind = FORMAT_SK_HEX;
		else if (memmem(text, len, OPENSSH_BEGIN, strlen(OPENSSH_BEGIN)))
			kind = FORMAT_SK_OPENSSH;
		else if (has_prefix(text, len, UNTRUSTED) && memmem(text, len, "minisign", 8))
			kind = FORMAT_SK_MINISIGN;
		else if (has_prefix(text, len, UNTRUSTED))
			kind = FORMAT_SK_SIGNIFY;
		else {
			*whyp = "unrecognised secret key format";
			return -1;
		}
	}
	switch (kind) {
	case FORMAT_SK_RAW:
		if (len != 32) {
			*whyp = "a raw seed is 32 bytes";
			return -1;
		}
		memcpy(seed, data, 32);
		return 0;
	case FORMAT_SK_HEX: {
		size_t bin_len;
		uint8_t tmp[32];

		if (tl != 64 || sodium_hex2bin(tmp, sizeof(tmp), text, tl, NULL, &bin_len, NULL) != 0 ||
		    bin_len != 32) {
			sigil_wipe(tmp, sizeof(tmp));
			*whyp = "a hex seed is 64 hex digits";
			return -1;
		}
		memcpy(seed, tmp, 32);
		sigil_wipe(tmp, sizeof(tmp));
		return 0;
	}
	case FORMAT_SK_OPENSSH:
		return seed_openssh(seed, text, len, whyp);
	case FORMAT_SK_MINISIGN:
		return seed_minisign(seed, text, len, whyp);
	case FORMAT_SK_SIGNIFY:
		return seed_signify(seed, text, len, whyp);
	case FORMAT_SK_AUTO:
		break;
	}
	*whyp = "unknown secret key format";
	return -1;
}
