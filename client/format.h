/* SPDX-License-Identifier: MIT */
/*
 * format.h - signature and public-key file formats of the sigil command
 *
 * Encoders and parsers for the detached-signature formats that other tools
 * verify (OpenSSH SSHSIG, minisign, signify) and for the public-key and
 * private-key files of those tools. Nothing here talks to the daemon or does
 * file I/O: callers pass buffers in and get buffers back. Returned strings are
 * malloc'd and NUL-terminated; the caller frees them.
 *
 * References (facts only, no code taken):
 * - OpenSSH PROTOCOL.sshsig (blob, signed data and armor of SSHSIG),
 *   PROTOCOL.key (openssh-key-v1 private keys), RFC 4251 section 5 (string);
 * - minisign's documented file formats (jedisct1.github.io/minisign);
 * - signify(1) from OpenBSD (key and signature files).
 */
#ifndef SIGIL_CLIENT_FORMAT_H
#define SIGIL_CLIENT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FORMAT_KEYNUM_LEN 8
#define FORMAT_SSHSIG_NS_MAX 255
#define FORMAT_COMMENT_MAX 1024

/* ---- hex and base64 (RFC 4648, standard alphabet, with padding) ---- */

/* out gets 2*n hex digits and a NUL; lowercase. */
void format_hex_encode(char *out, const uint8_t *in, size_t n);
/* Decodes exactly outlen bytes from inlen hex digits (either case).
 * 0, or -1 (out untouched) if inlen != 2*outlen or a digit is bad. */
int format_hex_decode(uint8_t *out, size_t outlen, const char *in, size_t inlen);
/* Length of the base64 text of n bytes, without the NUL. */
size_t format_b64_len(size_t n);
/* out gets format_b64_len(n) characters and a NUL. */
void format_b64_encode(char *out, const uint8_t *in, size_t n);
/* Decodes base64 text, skipping ASCII whitespace. Padding is required when
 * the length is not a multiple of 4. 0 with *outlenp set, or -1 if the text
 * is not base64 or decodes to more than outcap bytes. */
int format_b64_decode(uint8_t *out, size_t outcap, size_t *outlenp, const char *in, size_t inlen);

/* The 8-byte key number sigil uses in minisign and signify files:
 * the first 8 bytes of SHA-512("sigil keynum v1" || pk). Derived rather than
 * random so that `sigil pubkey` and `sigil sign` agree without state. */
void format_keynum(uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t pk[32]);

/* ---- OpenSSH ---- */

/* "ssh-ed25519 AAAA... comment\n" (comment may be NULL or empty). */
char *format_openssh_pubkey(const uint8_t pk[32], const char *comment);
/* An allowed_signers line: "principal namespaces="ns" ssh-ed25519 AAAA...\n"
 * (no namespaces option when ns is NULL). */
char *format_allowed_signers(const char *principal, const char *ns, const uint8_t pk[32]);

/* The SSHSIG "signed data" for an Ed25519 signature: MAGIC, namespace,
 * reserved (empty), hash algorithm, H(message). hashalg is "sha512" or
 * "sha256" (digest_len 64 or 32). Returns a malloc'd buffer and its length
 * in *lenp, or NULL on bad arguments or out of memory. */
uint8_t *format_sshsig_signed_data(size_t *lenp, const char *ns, const char *hashalg,
                                   const uint8_t *digest, size_t digest_len);
/* The armored signature ("-----BEGIN SSH SIGNATURE-----" ... ) for the
 * given public key, namespace, hash algorithm and Ed25519 signature. */
char *format_sshsig_armor(const uint8_t pk[32], const char *ns, const char *hashalg,
                          const uint8_t sig[64]);

typedef struct FormatSshsig {
	uint8_t pk[32];
	uint8_t sig[64];
	char ns[FORMAT_SSHSIG_NS_MAX + 1];
	char hashalg[16]; /* "sha512" or "sha256" */
} FormatSshsig;

/* Parses an armored SSHSIG holding an ssh-ed25519 signature. 0, or -1 with a
 * static reason in *whyp. */
int format_sshsig_parse(FormatSshsig *out, const char *text, size_t len, const char **whyp);

/* ---- minisign ---- */

/* The public key file: "untrusted comment: minisign public key <ID>\n" and
 * base64("Ed" || keynum || pk). */
char *format_minisign_pubkey(const uint8_t pk[32]);
/* The signature file of the prehashed ("ED") form. sig signs
 * BLAKE2b-512(file); global_sig signs sig || trusted_comment. */
char *format_minisign_sig(const uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t sig[64],
                          const char *untrusted_comment, const char *trusted_comment,
                          const uint8_t global_sig[64]);

typedef struct FormatMinisign {
	int prehashed; /* 1 for "ED" (BLAKE2b-512 of the file), 0 for legacy "Ed" */
	uint8_t keynum[FORMAT_KEYNUM_LEN];
	uint8_t sig[64];
	uint8_t global_sig[64];
	char trusted_comment[FORMAT_COMMENT_MAX + 1];
} FormatMinisign;

int format_minisign_parse(FormatMinisign *out, const char *text, size_t len, const char **whyp);

/* ---- signify ---- */

/* "untrusted comment: <comment>\n" and base64("Ed" || keynum || pk). */
char *format_signify_pubkey(const uint8_t pk[32], const char *comment);
/* "untrusted comment: <comment>\n" and base64("Ed" || keynum || sig). */
char *format_signify_sig(const uint8_t keynum[FORMAT_KEYNUM_LEN], const uint8_t sig[64],
                         const char *comment);

typedef struct FormatSignify {
	uint8_t keynum[FORMAT_KEYNUM_LEN];
	uint8_t sig[64];
} FormatSignify;

int format_signify_parse(FormatSignify *out, const char *text, size_t len, const char **whyp);

/* ---- public keys, any format ---- */

typedef enum {
	FORMAT_PK_RAW,      /* 32 bytes */
	FORMAT_PK_HEX,      /* 64 hex digits */
	FORMAT_PK_BASE64,   /* base64 of the 32 bytes */
	FORMAT_PK_OPENSSH,  /* ssh-ed25519 AAAA... (also an allowed_signers line) */
	FORMAT_PK_KEYNUM,   /* minisign or signify: "Ed" || keynum || pk */
} FormatPkKind;

typedef struct FormatPubkey {
	FormatPkKind kind;
	uint8_t pk[32];
	int has_keynum;
	uint8_t keynum[FORMAT_KEYNUM_LEN];
} FormatPubkey;

/* Reads a public key in any of the forms above, telling them apart by
 * content. For an allowed_signers file, principal (may be NULL) selects the
 * line; otherwise the first ssh-ed25519 key is taken. 0 or -1 with *whyp. */
int format_pubkey_parse(FormatPubkey *out, const uint8_t *data, size_t len,
                        const char *principal, const char **whyp);

/* ---- private keys made by the other tools (for `sigil import`) ---- */

typedef enum {
	FORMAT_SK_AUTO,
	FORMAT_SK_HEX,      /* 64 hex digits: the 32-byte seed */
	FORMAT_SK_RAW,      /* 32 bytes: the seed */
	FORMAT_SK_OPENSSH,  /* unencrypted openssh-key-v1 ed25519 key (ssh-keygen -N '') */
	FORMAT_SK_MINISIGN, /* unencrypted minisign secret key (minisign -G -W) */
	FORMAT_SK_SIGNIFY,  /* unencrypted signify secret key (signify -G -n) */
} FormatSkKind;

/* Extracts the 32-byte Ed25519 seed. Checks the checksums and the public
 * key each format carries. Encrypted keys are refused with a reason.
 * Scratch copies of secrets are wiped; seed is untouched on failure. */
int format_seed_parse(uint8_t seed[32], FormatSkKind kind, const uint8_t *data, size_t len,
                      const char **whyp);

#endif /* SIGIL_CLIENT_FORMAT_H */
