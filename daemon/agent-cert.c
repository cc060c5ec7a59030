/* SPDX-License-Identifier: MIT */
/*
 * agent-cert.c - OpenSSH Ed25519 certificates: the parser
 *
 * ssh-ed25519-cert-v01@openssh.com (PROTOCOL.certkeys):
 *   string type, string nonce, string pk[32], uint64 serial, uint32 type,
 *   string key id, string principals, uint64 valid after, uint64 valid
 *   before, string critical options, string extensions, string reserved,
 *   string signature key, string signature (over everything before it).
 * Pure code: public data only, nothing read past the blob.
 */
#include <string.h>

#include <sigil/crypto.h>

#include "agent-cert.h"

#define CERT_SUFFIX "-cert-v01@openssh.com"

bool agent_cert_is_type(const uint8_t *name, size_t len)
{
	size_t sl = strlen(CERT_SUFFIX);

	return name && len > sl && memcmp(name + len - sl, CERT_SUFFIX, sl) == 0;
}

static uint64_t get_u64(AgentIn *in)
{
	uint64_t hi = agent_get_u32(in);

	return hi << 32 | agent_get_u32(in);
}

/* a sequence of (string name, string data) with nothing else in it */
static bool options_ok(const uint8_t *p, size_t n)
{
	AgentIn in = { p, n, false };

	while (!in.bad && in.n > 0) {
		size_t l;

		(void)agent_get_string(&in, &l);
		(void)agent_get_string(&in, &l);
	}
	return !in.bad;
}

int agent_cert_parse(const uint8_t *blob, size_t len, AgentCertInfo *out)
{
	AgentIn in = { blob, len, false };
	AgentCertInfo ci = { 0 };
	const uint8_t *type, *pk, *id, *crit, *ext, *ca, *sig, *ca_type, *princ;
	size_t type_len, nonce_len, pk_len, id_len, princ_len, crit_len, ext_len, res_len, ca_len, sig_len,
		ca_type_len, signed_len;
	uint8_t s[64];

	type = agent_get_string(&in, &type_len);
	if (in.bad || !agent_string_is(type, type_len, AGENT_CERT_ED25519))
		return -1;
	(void)agent_get_string(&in, &nonce_len);
	pk = agent_get_string(&in, &pk_len);
	(void)get_u64(&in); /* serial */
	ci.type = agent_get_u32(&in);
	id = agent_get_string(&in, &id_len);
	princ = agent_get_string(&in, &princ_len);
	ci.valid_after = get_u64(&in);
	ci.valid_before = get_u64(&in);
	crit = agent_get_string(&in, &crit_len);
	ext = agent_get_string(&in, &ext_len);
	(void)agent_get_string(&in, &res_len);
	ca = agent_get_string(&in, &ca_len);
	signed_len = len - in.n;
	sig = agent_get_string(&in, &sig_len);
	if (in.bad || in.n != 0 || pk_len != 32 || (ci.type != 1 && ci.type != 2) || !options_ok(crit, crit_len) ||
	    !options_ok(ext, ext_len) || ca_len == 0)
		return -1;
	/* principals: a sequence of strings */
	{
		AgentIn pi = { princ, princ_len, false };

		while (!pi.bad && pi.n > 0) {
			size_t l;

			(void)agent_get_string(&pi, &l);
		}
		if (pi.bad)
			return -1;
	}
	/* the CA: any key type but a certificate ("chained" certificates are
	 * not supported by OpenSSH) */
	{
		AgentIn cin = { ca, ca_len, false };

		ca_type = agent_get_string(&cin, &ca_type_len);
		if (cin.bad || ca_type_len == 0 || agent_cert_is_type(ca_type, ca_type_len))
			return -1;
	}
	if (agent_string_is(ca_type, ca_type_len, "ssh-ed25519")) {
		uint8_t capk[32];

		if (agent_parse_ed25519_blob(ca, ca_len, capk) < 0 || agent_parse_ed25519_sig(sig, sig_len, s) < 0 ||
		    sigil_ed25519_verify(s, blob, signed_len, capk, SIGIL_ED25519_STRICT) != 0)
			return -1;
		ci.ca_ed25519 = true;
	} else {
		/* a CA type OpenSSH signs with, and a signature blob of string
		 * algorithm, string signature (not checked here: sshd does) */
		static const char *const other[] = { "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
			                             "ecdsa-sha2-nistp521", "sk-ssh-ed25519@openssh.com",
			                             "sk-ecdsa-sha2-nistp256@openssh.com" };
		AgentIn sin = { sig, sig_len, false };
		bool known = false;
		size_t l;

		for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
			known |= agent_string_is(ca_type, ca_type_len, other[i]);
		(void)agent_get_string(&sin, &l);
		(void)agent_get_string(&sin, &l);
		if (!known || sin.bad || sin.n != 0 || l == 0)
			return -1;
	}
	memcpy(ci.pk, pk, 32);
	ci.key_id = id;
	ci.key_id_len = id_len;
	*out = ci;
	return 0;
}

int agent_cert_key_of(const uint8_t *blob, size_t len, uint8_t pk[32], bool *is_cert)
{
	AgentCertInfo ci;

	if (agent_parse_ed25519_blob(blob, len, pk) == 0) {
		*is_cert = false;
		return 0;
	}
	if (agent_cert_parse(blob, len, &ci) < 0)
		return -1;
	memcpy(pk, ci.pk, 32);
	*is_cert = true;
	return 0;
}
