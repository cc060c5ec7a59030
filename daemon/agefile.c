/* SPDX-License-Identifier: MIT */
/*
 * agefile.c - the age v1 file format (C2SP age), on byte buffers
 *
 * See agefile.h. A file is
 *   "age-encryption.org/v1\n", stanzas, "--- " base64(MAC) "\n",
 *   16-byte nonce, STREAM chunks
 * MAC = HMAC-SHA256(HKDF(file key, "", "header"), the header up to and
 * including "---"); payload key = HKDF(file key, nonce, "payload");
 * chunk i: ChaCha20-Poly1305 with nonce = 11-byte big-endian i || last flag.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "agefile.h"

#define B64_LINE 64  /* columns of a stanza body line */
#define B64_LINE_BYTES 48
#define MAC_LEN 32
#define NONCE_LEN 16
#define TAG_LEN crypto_aead_chacha20poly1305_IETF_ABYTES
#define X25519_INFO "age-encryption.org/v1/X25519"

int agefile_buf_put(AgeBuf *b, const void *p, size_t n)
{
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		/* no realloc: the old bytes may be secret */
		d = malloc(cap);
		if (!d)
			return -ENOMEM;
		if (b->len)
			memcpy(d, b->data, b->len);
		if (b->data) {
			sodium_memzero(b->data, b->cap);
			free(b->data);
		}
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

static int buf_puts(AgeBuf *b, const char *s)
{
	return agefile_buf_put(b, s, strlen(s));
}

void agefile_buf_deinit(AgeBuf *b)
{
	if (b->data) {
		sodium_memzero(b->data, b->cap);
		free(b->data);
	}
	*b = (AgeBuf)AGEBUF_NULL(b);
}

int agefile_b64_decode(uint8_t *out, size_t out_cap, size_t *out_lenp, const char *in, size_t in_len)
{
	const char *end = NULL;
	size_t n = 0;

	/* libsodium rejects non-zero leftover bits: canonical only */
	if (in_len == 0) {
		*out_lenp = 0;
		return 0;
	}
	if (sodium_base642bin(out, out_cap, in, in_len, NULL, &n, &end, sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0 ||
	    end != in + in_len)
		return -EINVAL;
	*out_lenp = n;
	return 0;
}

static int b64_put(AgeBuf *out, const uint8_t *p, size_t n, int variant)
{
	size_t cap = sodium_base64_encoded_len(n, variant);
	char *s = malloc(cap);
	int r;

	if (!s)
		return -ENOMEM;
	sodium_bin2base64(s, cap, p, n, variant);
	r = buf_puts(out, s);
	free(s);
	return r;
}

/* HKDF-SHA256 (RFC 5869) of one block: out_len <= 32 */
static void hkdf_sha256(uint8_t *out, size_t out_len, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                        size_t ikm_len, const char *info)
{
	static const uint8_t no_salt[1];
	crypto_auth_hmacsha256_state st;
	uint8_t prk[32], t[32];
	const uint8_t one = 1;

	/* libsodium declares the key non-null, even of length 0 (the header MAC's empty salt) */
	crypto_auth_hmacsha256_init(&st, salt ? salt : no_salt, salt_len);
	crypto_auth_hmacsha256_update(&st, ikm, ikm_len);
	crypto_auth_hmacsha256_final(&st, prk);
	crypto_auth_hmacsha256_init(&st, prk, sizeof(prk));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)info, strlen(info));
	crypto_auth_hmacsha256_update(&st, &one, 1);
	crypto_auth_hmacsha256_final(&st, t);
	memcpy(out, t, out_len);
	sodium_memzero(prk, sizeof(prk));
	sodium_memzero(t, sizeof(t));
	sodium_memzero(&st, sizeof(st));
}

/* printable ASCII without space, non-empty (age's argument rule) */
static bool arg_valid(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 33 || (unsigned char)s[i] > 126)
			return false;
	return true;
}

void agefile_stanza_deinit(AgeStanza *s)
{
	if (s->body) {
		sodium_memzero(s->body, s->body_len);
		free(s->body);
	}
	free(s->text_);
	*s = (AgeStanza)AGESTANZA_NULL(s);
}

int agefile_stanza_parse(AgeStanza *s, const uint8_t *in, size_t len, size_t *usedp)
{
	size_t lim = len < AGEFILE_STANZA_MAX ? len : AGEFILE_STANZA_MAX, pos, n_args = 0, body_len = 0;
	const uint8_t *nl, *p;
	AgeStanza t = AGESTANZA_NULL(t);
	uint8_t *body;

	/* the prefix, as far as it is there */
	for (size_t i = 0; i < 3 && i < len; i++)
		if (in[i] != (uint8_t)"-> "[i])
			return -EINVAL;
	nl = memchr(in, '\n', lim);
	if (!nl)
		return len >= AGEFILE_STANZA_MAX ? -EINVAL : -EAGAIN;
	if (nl - in < 4)
		return -EINVAL;
	/* the arguments: single spaces between non-empty printable strings */
	for (p = in + 3; p <= nl;) {
		const uint8_t *e = p;

		while (e < nl && *e != ' ')
			e++;
		if (!arg_valid((const char *)p, (size_t)(e - p)) || n_args == AGEFILE_ARGS_MAX)
			return -EINVAL;
		n_args++;
		p = e + 1;
	}
	/* the body lines: find the end first (no allocation for a partial one) */
	pos = (size_t)(nl - in) + 1;
	for (;;) {
		const uint8_t *e = memchr(in + pos, '\n', lim - pos);
		size_t l;

		if (!e)
			return len >= AGEFILE_STANZA_MAX ? -EINVAL : -EAGAIN;
		l = (size_t)(e - (in + pos));
		if (l > B64_LINE)
			return -EINVAL;
		body_len += l;
		pos += l + 1;
		if (l < B64_LINE)
			break;
	}
	t.text_ = malloc((size_t)(nl - in) - 2);
	body = malloc(body_len ? body_len : 1);
	if (!t.text_ || !body) {
		free(t.text_);
		free(body);
		return -ENOMEM;
	}
	t.body = body;
	memcpy(t.text_, in + 3, (size_t)(nl - in) - 3);
	t.text_[(nl - in) - 3] = '\0';
	for (char *a = t.text_; a;) {
		char *sp = strchr(a, ' ');

		t.args[t.n_args++] = a;
		if (sp)
			*sp++ = '\0';
		a = sp;
	}
	/* decode each line: every full line is 48 bytes, the last is short */
	for (size_t q = (size_t)(nl - in) + 1; q < pos;) {
		const uint8_t *e = memchr(in + q, '\n', pos - q);
		size_t l = (size_t)(e - (in + q)), got = 0;

		if (agefile_b64_decode(t.body + t.body_len, body_len - t.body_len + 1, &got, (const char *)in + q, l) ||
		    (l == B64_LINE && got != B64_LINE_BYTES) || got > B64_LINE_BYTES) {
			agefile_stanza_deinit(&t);
			return -EINVAL;
		}
		t.body_len += got;
		q += l + 1;
	}
	*s = t;
	*usedp = pos;
	return 0;
}

int agefile_stanza_write(AgeBuf *out, const char *const *args, size_t n_args, const uint8_t *body,
                         size_t body_len)
{
	size_t i = 0;
	int r;

	if (n_args == 0)
		return -EINVAL;
	for (size_t k = 0; k < n_args; k++)
		if (!arg_valid(args[k], strlen(args[k])))
			return -EINVAL;
	r = buf_puts(out, "->");
	for (size_t k = 0; k < n_args && !r; k++)
		if (!(r = buf_puts(out, " ")))
			r = buf_puts(out, args[k]);
	if (!r)
		r = buf_puts(out, "\n");
	/* full lines, then a short one (empty when the body is a multiple of 48) */
	for (;; i += B64_LINE_BYTES) {
		size_t n = body_len - i < B64_LINE_BYTES ? body_len - i : B64_LINE_BYTES;

		if (!r && n)
			r = b64_put(out, body + i, n, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
		if (!r)
			r = buf_puts(out, "\n");
		if (r || n < B64_LINE_BYTES)
			break;
	}
	return r;
}

int agefile_x25519_unwrap(uint8_t file_key[AGEFILE_FILE_KEY_LEN], const uint8_t scalar[AGEFILE_KEY_LEN],
                          const uint8_t share[AGEFILE_KEY_LEN], const uint8_t *body, size_t body_len)
{
	static const uint8_t zero_nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
	uint8_t shared[32], salt[64], wrap[32], fk[AGEFILE_FILE_KEY_LEN];
	unsigned long long fk_len = 0;
	int zero, r;

	if (body_len != AGEFILE_BODY_LEN)
		return -EINVAL;
	/* sigil_x25519's own -1 is the same test; sodium_is_zero is constant time */
	(void)sigil_x25519(shared, scalar, share);
	zero = sodium_is_zero(shared, sizeof(shared));
	memcpy(salt, share, 32);
	sigil_x25519_public(salt + 32, scalar);
	hkdf_sha256(wrap, sizeof(wrap), salt, sizeof(salt), shared, sizeof(shared), X25519_INFO);
	sodium_memzero(shared, sizeof(shared));
	if (zero) {
		sodium_memzero(wrap, sizeof(wrap));
		return -EDOM;
	}
	r = crypto_aead_chacha20poly1305_ietf_decrypt(fk, &fk_len, NULL, body, body_len, NULL, 0, zero_nonce, wrap);
	sodium_memzero(wrap, sizeof(wrap));
	if (r != 0 || fk_len != AGEFILE_FILE_KEY_LEN) {
		sodium_memzero(fk, sizeof(fk));
		return -EBADMSG;
	}
	memcpy(file_key, fk, sizeof(fk));
	sodium_memzero(fk, sizeof(fk));
	return 0;
}

static void header_mac(uint8_t mac[MAC_LEN], const uint8_t file_key[AGEFILE_FILE_KEY_LEN], const uint8_t *hdr,
                       size_t hdr_len)
{
	uint8_t k[32];

	hkdf_sha256(k, sizeof(k), NULL, 0, file_key, AGEFILE_FILE_KEY_LEN, "header");
	crypto_auth_hmacsha256(mac, hdr, hdr_len, k);
	sodium_memzero(k, sizeof(k));
}

static void chunk_nonce(uint8_t nonce[12], uint64_t i, bool last)
{
	memset(nonce, 0, 12);
	for (int k = 0; k < 8; k++)
		nonce[10 - k] = (uint8_t)(i >> (8 * k));
	nonce[11] = last ? 1 : 0;
}

static int armor(AgeBuf *out, const uint8_t *bin, size_t n)
{
	size_t cap = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
	char *s = malloc(cap);
	size_t sl;
	int r;

	if (!s)
		return -ENOMEM;
	sodium_bin2base64(s, cap, bin, n, sodium_base64_VARIANT_ORIGINAL);
	sl = strlen(s);
	r = buf_puts(out, AGEFILE_ARMOR_BEGIN "\n");
	for (size_t i = 0; i < sl && !r; i += B64_LINE)
		if (!(r = agefile_buf_put(out, s + i, sl - i < B64_LINE ? sl - i : B64_LINE)))
			r = buf_puts(out, "\n");
	if (!r)
		r = buf_puts(out, AGEFILE_ARMOR_END "\n");
	free(s);
	return r;
}

int agefile_encrypt(AgeBuf *out, const uint8_t recipient[AGEFILE_KEY_LEN], const uint8_t *pt, size_t pt_len,
                    bool armored)
{
	static const uint8_t zero_nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
	uint8_t file_key[AGEFILE_FILE_KEY_LEN], eph[32], shared[32], salt[64], wrap[32], body[AGEFILE_BODY_LEN];
	uint8_t mac[MAC_LEN], nonce[NONCE_LEN], pkey[32], cn[12];
	char share_b64[64];
	const char *args[2] = { "X25519", share_b64 };
	AgeBuf f = AGEBUF_NULL(f);
	uint8_t *chunk = NULL;
	int r, zero;

	randombytes_buf(file_key, sizeof(file_key));
	randombytes_buf(eph, sizeof(eph));
	randombytes_buf(nonce, sizeof(nonce));
	sigil_x25519_public(salt, eph);
	(void)sigil_x25519(shared, eph, recipient);
	zero = sodium_is_zero(shared, sizeof(shared));
	memcpy(salt + 32, recipient, 32);
	hkdf_sha256(wrap, sizeof(wrap), salt, sizeof(salt), shared, sizeof(shared), X25519_INFO);
	crypto_aead_chacha20poly1305_ietf_encrypt(body, NULL, file_key, sizeof(file_key), NULL, 0, NULL, zero_nonce,
	                                          wrap);
	sodium_memzero(eph, sizeof(eph));
	sodium_memzero(shared, sizeof(shared));
	sodium_memzero(wrap, sizeof(wrap));
	if (zero) {
		r = -EINVAL;
		goto out;
	}
	sodium_bin2base64(share_b64, sizeof(share_b64), salt, 32, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	r = buf_puts(&f, AGEFILE_VERSION_LINE "\n");
	if (!r)
		r = agefile_stanza_write(&f, args, 2, body, sizeof(body));
	if (!r)
		r = buf_puts(&f, "---");
	if (r)
		goto out;
	header_mac(mac, file_key, f.data, f.len);
	r = buf_puts(&f, " ");
	if (!r)
		r = b64_put(&f, mac, sizeof(mac), sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
	if (!r)
		r = buf_puts(&f, "\n");
	if (!r)
		r = agefile_buf_put(&f, nonce, sizeof(nonce));
	if (r)
		goto out;
	hkdf_sha256(pkey, sizeof(pkey), nonce, sizeof(nonce), file_key, sizeof(file_key), "payload");
	chunk = malloc(AGEFILE_CHUNK + TAG_LEN);
	if (!chunk) {
		r = -ENOMEM;
		goto out;
	}
	/* every chunk full but the last, which is empty only for an empty file */
	for (uint64_t i = 0, off = 0;; i++, off += AGEFILE_CHUNK) {
		size_t n = pt_len - off > AGEFILE_CHUNK ? AGEFILE_CHUNK : pt_len - off;
		bool last = off + n == pt_len;

		chunk_nonce(cn, i, last);
		crypto_aead_chacha20poly1305_ietf_encrypt(chunk, NULL, pt + off, n, NULL, 0, NULL, cn, pkey);
		r = agefile_buf_put(&f, chunk, n + TAG_LEN);
		if (r || last)
			break;
	}
	if (r)
		goto out;
	r = armored ? armor(out, f.data, f.len) : agefile_buf_put(out, f.data, f.len);
out:
	sodium_memzero(file_key, sizeof(file_key));
	sodium_memzero(pkey, sizeof(pkey));
	if (chunk) {
		sodium_memzero(chunk, AGEFILE_CHUNK + TAG_LEN);
		free(chunk);
	}
	agefile_buf_deinit(&f);
	return r;
}

static bool is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* the binary file inside an armor (lines of 64 columns but the last, padded
 * base64, LF or CRLF; whitespace around the armor is allowed, as age does) */
static int dearmor(AgeBuf *bin, const uint8_t *in, size_t len)
{
	const size_t bl = strlen(AGEFILE_ARMOR_BEGIN), el = strlen(AGEFILE_ARMOR_END);
	size_t pos = 0, end = len;
	bool short_seen = false;
	int r;

	while (pos < len && is_space(in[pos]))
		pos++;
	while (end > pos && is_space(in[end - 1]))
		end--;
	if (end - pos < bl + el || memcmp(in + pos, AGEFILE_ARMOR_BEGIN, bl) != 0 ||
	    memcmp(in + end - el, AGEFILE_ARMOR_END, el) != 0)
		return -EINVAL;
	pos += bl;
	end -= el;
	if (pos < end && in[pos] == '\r')
		pos++;
	if (pos >= end || in[pos++] != '\n')
		return -EINVAL;
	while (pos < end) {
		const uint8_t *nl = memchr(in + pos, '\n', end - pos);
		size_t l, n = 0;
		uint8_t tmp[48];
		const char *e = NULL;

		if (!nl || short_seen)
			return -EINVAL;
		l = (size_t)(nl - (in + pos));
		if (l && in[pos + l - 1] == '\r')
			l--;
		if (l == 0 || l > B64_LINE || l % 4)
			return -EINVAL;
		if (l < B64_LINE)
			short_seen = true;
		if (sodium_base642bin(tmp, sizeof(tmp), (const char *)in + pos, l, NULL, &n, &e,
		                      sodium_base64_VARIANT_ORIGINAL) != 0 ||
		    e != (const char *)in + pos + l)
			return -EINVAL;
		r = agefile_buf_put(bin, tmp, n);
		sodium_memzero(tmp, sizeof(tmp));
		if (r)
			return r;
		pos = (size_t)(nl - in) + 1;
	}
	return bin->len ? 0 : -EINVAL;
}

static int decrypt_bin(AgeBuf *pt, const uint8_t scalar[AGEFILE_KEY_LEN], const uint8_t *in, size_t len)
{
	const size_t vl = strlen(AGEFILE_VERSION_LINE "\n");
	uint8_t file_key[AGEFILE_FILE_KEY_LEN], mac[MAC_LEN], want[MAC_LEN], pkey[32], cn[12];
	size_t pos = vl, n_stanzas = 0, mac_len = 0;
	bool found = false, scrypt = false;
	uint8_t *chunk = NULL;
	int r = 0, why = -ENOENT;

	if (len < vl || memcmp(in, AGEFILE_VERSION_LINE "\n", vl) != 0)
		return -EINVAL;
	for (;;) {
		AgeStanza s;
		size_t used, shl = 0;
		uint8_t share[33];

		if (len - pos >= 3 && memcmp(in + pos, "---", 3) == 0)
			break;
		r = agefile_stanza_parse(&s, in + pos, len - pos, &used);
		if (r == -EAGAIN)
			r = -EINVAL; /* truncated in the header */
		if (r)
			goto out;
		pos += used;
		n_stanzas++;
		if (strcmp(s.args[0], "scrypt") == 0)
			scrypt = true;
		if (strcmp(s.args[0], "X25519") == 0) {
			if (s.n_args != 2 || agefile_b64_decode(share, sizeof(share), &shl, s.args[1], strlen(s.args[1])) ||
			    shl != 32 || s.body_len != AGEFILE_BODY_LEN) {
				agefile_stanza_deinit(&s);
				r = -EINVAL;
				goto out;
			}
			if (!found) {
				int u = agefile_x25519_unwrap(file_key, scalar, share, s.body, s.body_len);

				if (u == 0)
					found = true;
				else if (u == -EDOM)
					why = -EDOM;
			}
		}
		agefile_stanza_deinit(&s);
	}
	if (n_stanzas == 0 || (scrypt && n_stanzas != 1)) {
		r = -EINVAL;
		goto out;
	}
	/* "--- " MAC "\n" */
	if (len - pos < 4 + 43 + 1 || in[pos + 3] != ' ' || in[pos + 4 + 43] != '\n' ||
	    agefile_b64_decode(mac, sizeof(mac), &mac_len, (const char *)in + pos + 4, 43) || mac_len != MAC_LEN) {
		r = -EINVAL;
		goto out;
	}
	if (!found) {
		r = why;
		goto out;
	}
	header_mac(want, file_key, in, pos + 3);
	if (crypto_verify_32(want, mac) != 0) {
		r = -EBADMSG;
		goto out;
	}
	pos += 4 + 43 + 1;
	if (len - pos < NONCE_LEN + TAG_LEN) {
		r = -EBADMSG;
		goto out;
	}
	hkdf_sha256(pkey, sizeof(pkey), in + pos, NONCE_LEN, file_key, sizeof(file_key), "payload");
	pos += NONCE_LEN;
	chunk = malloc(AGEFILE_CHUNK);
	if (!chunk) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t i = 0;; i++) {
		size_t left = len - pos, n = left > AGEFILE_CHUNK + TAG_LEN ? AGEFILE_CHUNK + TAG_LEN : left;
		bool last = n == left;

		/* an empty last chunk only for an empty file */
		if (n < TAG_LEN || (last && n == TAG_LEN && i > 0)) {
			r = -EBADMSG;
			break;
		}
		chunk_nonce(cn, i, last);
		if (crypto_aead_chacha20poly1305_ietf_decrypt(chunk, NULL, NULL, in + pos, n, NULL, 0, cn, pkey) != 0) {
			r = -EBADMSG;
			break;
		}
		r = agefile_buf_put(pt, chunk, n - TAG_LEN);
		pos += n;
		if (r || last)
			break;
	}
out:
	sodium_memzero(file_key, sizeof(file_key));
	sodium_memzero(pkey, sizeof(pkey));
	if (chunk) {
		sodium_memzero(chunk, AGEFILE_CHUNK);
		free(chunk);
	}
	return r;
}

int agefile_decrypt(AgeBuf *pt, const uint8_t scalar[AGEFILE_KEY_LEN], const uint8_t *in, size_t in_len)
{
	size_t start = pt->len, i = 0;
	int r;

	while (i < in_len && is_space(in[i]))
		i++;
	if (in_len - i >= 5 && memcmp(in + i, "-----", 5) == 0) {
		AgeBuf bin = AGEBUF_NULL(bin);

		r = dearmor(&bin, in, in_len);
		if (!r)
			r = decrypt_bin(pt, scalar, bin.data, bin.len);
		agefile_buf_deinit(&bin);
	} else {
		r = decrypt_bin(pt, scalar, in, in_len);
	}
	if (r) {
		if (pt->data)
			sodium_memzero(pt->data + start, pt->cap - start);
		pt->len = start;
	}
	return r;
}

int agefile_key_encode(AgeBuf *out, const AgeKey *k)
{
	size_t ll = strnlen(k->label, sizeof(k->label));
	uint8_t hdr[3], pl[2];

	if (ll == 0 || ll > AGEFILE_KEY_LABEL_MAX || k->policy_len > AGEFILE_KEY_POLICY_MAX)
		return -EINVAL;
	hdr[0] = k->type;
	hdr[1] = k->exportable ? 1 : 0;
	hdr[2] = (uint8_t)ll;
	pl[0] = (uint8_t)(k->policy_len >> 8);
	pl[1] = (uint8_t)k->policy_len;
	if (buf_puts(out, AGEFILE_KEY_MAGIC) || agefile_buf_put(out, hdr, 3) || agefile_buf_put(out, k->label, ll) ||
	    agefile_buf_put(out, k->seed, sizeof(k->seed)) || agefile_buf_put(out, pl, 2) ||
	    agefile_buf_put(out, k->policy, k->policy_len))
		return -ENOMEM;
	return 0;
}

int agefile_key_decode(AgeKey *k, const uint8_t *in, size_t len)
{
	const size_t ml = strlen(AGEFILE_KEY_MAGIC);
	size_t pos = ml + 3, ll, pl;

	memset(k, 0, sizeof(*k));
	if (len < pos || memcmp(in, AGEFILE_KEY_MAGIC, ml) != 0 || in[ml] > 1 || in[ml + 1] > 1)
		return -EINVAL;
	ll = in[ml + 2];
	if (ll == 0 || ll > AGEFILE_KEY_LABEL_MAX || len < pos + ll + AGEFILE_KEY_LEN + 2)
		return -EINVAL;
	k->type = in[ml];
	k->exportable = in[ml + 1] == 1;
	memcpy(k->label, in + pos, ll);
	pos += ll;
	memcpy(k->seed, in + pos, AGEFILE_KEY_LEN);
	pos += AGEFILE_KEY_LEN;
	pl = (size_t)in[pos] << 8 | in[pos + 1];
	pos += 2;
	if (pl > AGEFILE_KEY_POLICY_MAX || len != pos + pl || memchr(k->label, '\0', ll)) {
		sodium_memzero(k, sizeof(*k));
		return -EINVAL;
	}
	memcpy(k->policy, in + pos, pl);
	k->policy_len = pl;
	return 0;
}
