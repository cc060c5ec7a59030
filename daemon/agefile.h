/* SPDX-License-Identifier: MIT */
/*
 * agefile.h - the age v1 file format (C2SP age), on byte buffers
 *
 * What sigild needs of age, and nothing that knows about keys, the
 * keystore or the loop: the X25519 stanza (wrap and unwrap of a 16-byte
 * file key), the header (stanzas, HMAC-SHA256 MAC), the STREAM payload
 * (ChaCha20-Poly1305 in 64 KiB chunks), the ASCII armor, the stanza text
 * that age's plugin protocol also uses (age-plugin-sigil parses its IPC
 * with agefile_stanza_parse()), and the plaintext of a key moved between
 * hosts (agefile_key_encode(): docs/age.md).
 *
 * HMAC-SHA256 (and so HKDF-SHA256) and ChaCha20-Poly1305 are libsodium's;
 * X25519 is sigil's own. Every function returns 0 or a negative errno:
 *   -EINVAL   malformed input (not an age file, a bad stanza, a bad length)
 *   -ENOENT   no X25519 stanza of the file opens with the key
 *   -EBADMSG  authentication failed (header MAC, payload chunk, stanza tag)
 *   -EDOM     the X25519 shared secret is zero (a small-order share)
 *   -ENOMEM   out of memory
 * Secrets (X25519 scalars, shared secrets, file keys, wrap keys, plaintext
 * buffers) are wiped before their memory is released.
 */
#ifndef SIGIL_DAEMON_AGEFILE_H
#define SIGIL_DAEMON_AGEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGEFILE_FILE_KEY_LEN 16
#define AGEFILE_KEY_LEN 32        /* X25519 scalars, shares, recipients */
#define AGEFILE_BODY_LEN 32       /* an X25519 stanza body: 16 + 16-byte tag */
#define AGEFILE_CHUNK 65536       /* STREAM plaintext chunk */
#define AGEFILE_STANZA_MAX 65536  /* bytes of one stanza's text (IPC, header) */
#define AGEFILE_ARGS_MAX 32       /* arguments of one stanza, its type included */

#define AGEFILE_VERSION_LINE "age-encryption.org/v1"
#define AGEFILE_ARMOR_BEGIN "-----BEGIN AGE ENCRYPTED FILE-----"
#define AGEFILE_ARMOR_END "-----END AGE ENCRYPTED FILE-----"

/* A growable byte buffer; agefile_buf_deinit() wipes it before freeing. */
typedef struct AgeBuf {
	uint8_t *data;
	size_t len;
	size_t cap;
} AgeBuf;

#define AGEBUF_NULL(_x) { .data = NULL, .len = 0, .cap = 0 }

int agefile_buf_put(AgeBuf *b, const void *p, size_t n);
void agefile_buf_deinit(AgeBuf *b);

/**
 * struct AgeStanza - one parsed stanza: "-> ARG ARG...\n" then its body.
 * @args:   args[0] is the type (or, in the plugin IPC, the command); each
 *          is a NUL-terminated copy, printable ASCII 33-126, non-empty
 * @n_args: at least 1
 * @body:   the decoded body (may be empty)
 */
typedef struct AgeStanza {
	char *args[AGEFILE_ARGS_MAX];
	size_t n_args;
	uint8_t *body;
	size_t body_len;
	char *text_; /* owned storage of the arguments */
} AgeStanza;

#define AGESTANZA_NULL(_x) { .n_args = 0, .body = NULL, .body_len = 0, .text_ = NULL }

/**
 * agefile_stanza_parse() - one stanza from the start of @in.
 * @s:     output (call agefile_stanza_deinit() after a 0 return only)
 * @usedp: the bytes the stanza took, its last newline included
 *
 * The body is canonical unpadded base64 in lines of 64 columns, ended by a
 * line shorter than 64 (possibly empty), as the age header and the plugin
 * protocol write it. Accepts no CR, no empty argument, no more than
 * AGEFILE_ARGS_MAX arguments, no more than AGEFILE_STANZA_MAX bytes.
 *
 * Return: 0, -EAGAIN (the stanza is incomplete: read more), -EINVAL
 * (malformed; also for a line that starts with "---": the header's end),
 * -ENOMEM.
 */
int agefile_stanza_parse(AgeStanza *s, const uint8_t *in, size_t len, size_t *usedp);
void agefile_stanza_deinit(AgeStanza *s);

/**
 * agefile_stanza_write() - append a stanza: "-> " args joined by spaces,
 * then the body in canonical base64 lines (an empty line for an empty
 * body). Return: 0, -EINVAL (an argument that is empty or not printable
 * ASCII), -ENOMEM.
 */
int agefile_stanza_write(AgeBuf *out, const char *const *args, size_t n_args, const uint8_t *body,
                         size_t body_len);

/**
 * agefile_x25519_unwrap() - open an X25519 stanza with @scalar.
 * @file_key: output, written on success only
 * @scalar:   the recipient's X25519 secret (clamped as it is read)
 * @share:    the stanza's ephemeral share (its argument, decoded)
 * @body:     the stanza's body; @body_len must be AGEFILE_BODY_LEN
 *
 * wrap key = HKDF-SHA256(ikm = X25519(scalar, share), salt = share ||
 * X25519(scalar, 9), info "age-encryption.org/v1/X25519"), then
 * ChaCha20-Poly1305 with a zero nonce. No branch or index depends on the
 * scalar or the shared secret, except on whether the shared secret is
 * zero, which the (public) share alone decides.
 * Return: 0, -EINVAL (body length), -EDOM (zero shared secret), -EBADMSG
 * (the tag: the stanza is not for this key).
 */
int agefile_x25519_unwrap(uint8_t file_key[AGEFILE_FILE_KEY_LEN], const uint8_t scalar[AGEFILE_KEY_LEN],
                          const uint8_t share[AGEFILE_KEY_LEN], const uint8_t *body, size_t body_len);

/**
 * agefile_encrypt() - a complete age file of @pt for one X25519 recipient.
 * @out:       appended to (binary, or the ASCII armor when @armor)
 * @recipient: the recipient's X25519 public key (the data of its age1...)
 * Fresh randomness (libsodium) for the file key, the ephemeral scalar and
 * the payload nonce. Return: 0, -EINVAL (recipient of small order), -ENOMEM.
 */
int agefile_encrypt(AgeBuf *out, const uint8_t recipient[AGEFILE_KEY_LEN], const uint8_t *pt, size_t pt_len,
                    bool armor);

/**
 * agefile_decrypt() - open an age file (binary or armored) with an X25519
 * key: the first X25519 stanza that opens gives the file key; stanzas of
 * other types are skipped; an scrypt stanza must be alone (and does not
 * open: -ENOENT). @pt is appended to; on an error it is wiped and emptied.
 * Return: 0, -EINVAL (malformed file or armor), -ENOENT (no stanza for the
 * key), -EBADMSG (header MAC or payload: tampered or truncated), -ENOMEM.
 */
int agefile_decrypt(AgeBuf *pt, const uint8_t scalar[AGEFILE_KEY_LEN], const uint8_t *in, size_t in_len);

/*
 * The plaintext of a moved key (docs/age.md), big-endian:
 *   "sigil-key-v1\n" (13 bytes), 1 type (0 ed25519, 1 x25519),
 *   1 exportable (0/1), 1 label length (1-64), label, 32 seed,
 *   2 policy length, policy (policy.c's key file form; 0 bytes: none).
 */
#define AGEFILE_KEY_MAGIC "sigil-key-v1\n"
#define AGEFILE_KEY_LABEL_MAX 64
#define AGEFILE_KEY_POLICY_MAX 4096

typedef struct AgeKey {
	uint8_t type;
	bool exportable;
	char label[AGEFILE_KEY_LABEL_MAX + 1];
	uint8_t seed[AGEFILE_KEY_LEN];         /* secret */
	uint8_t policy[AGEFILE_KEY_POLICY_MAX];
	size_t policy_len;
} AgeKey;

/* Return: 0, -EINVAL (label or policy length), -ENOMEM */
int agefile_key_encode(AgeBuf *out, const AgeKey *k);
/* Return: 0 or -EINVAL (@k is wiped then) */
int agefile_key_decode(AgeKey *k, const uint8_t *in, size_t len);

/* canonical unpadded standard base64 (RFC 4648 4, 3.5). Return: 0 or -EINVAL */
int agefile_b64_decode(uint8_t *out, size_t out_cap, size_t *out_lenp, const char *in, size_t in_len);

#endif /* SIGIL_DAEMON_AGEFILE_H */
