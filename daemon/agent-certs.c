/* SPDX-License-Identifier: MIT */
/*
 * agent-certs.c - the OpenSSH certificates sigild keeps with its Ed25519
 * keys: added with ssh-add, listed and used beside the plain key, removed
 * as OpenSSH's agent removes them, persisted with the key
 *
 * A certificate belongs to the key it certifies (by public key). It is
 * listed while that key is listed (same policy and destination
 * constraints) and signs with it under the key's constraints. Persisted
 * when its key has a key file: <state>/ssh-certs/<64 hex digits of the
 * public key>, mode 0600, holding string blob, string comment for each
 * certificate (written to a temporary file, synced, renamed). Memory-only
 * keys keep their certificates in memory only.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "agent-cert.h"
#include "log.h"

#define CERTS_DIR "ssh-certs"
#define CERTS_FILE_MAX (1u << 20)

typedef struct CertEntry {
	struct CertEntry *next;
	uint8_t pk[32];
	uint8_t *blob;
	size_t blob_len;
	uint8_t *comment;
	size_t comment_len;
	bool persist;         /* its key has a key file: in the file */
} CertEntry;

typedef struct CertHidden {
	struct CertHidden *next;
	uint8_t pk[32];
} CertHidden;

struct AgentCerts {
	int dirfd;            /* <state>/ssh-certs, or -1 */
	CertEntry *head;      /* in the order added */
	CertHidden *hidden;   /* keys whose plain identity was removed */
};

static void entry_free(CertEntry *e)
{
	free(e->blob);
	free(e->comment);
	free(e);
}

static void *dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

static size_t count_pk(const AgentCerts *ac, const uint8_t pk[32])
{
	size_t n = 0;

	for (const CertEntry *e = ac->head; e; e = e->next)
		n += memcmp(e->pk, pk, 32) == 0;
	return n;
}

static void file_name(char out[65], const uint8_t pk[32])
{
	sodium_bin2hex(out, 65, pk, 32);
}

/* rewrite (or remove, when empty) the file of pk */
static void certs_save(AgentCerts *ac, const uint8_t pk[32])
{
	char name[65], tmp[80];
	AgentOut o = { 0 };
	int fd;

	if (ac->dirfd < 0)
		return;
	file_name(name, pk);
	for (const CertEntry *e = ac->head; e; e = e->next) {
		if (memcmp(e->pk, pk, 32) != 0 || !e->persist)
			continue;
		agent_put_string(&o, e->blob, e->blob_len);
		agent_put_string(&o, e->comment, e->comment_len);
	}
	if (o.len == 0 && !o.oom) {
		if (unlinkat(ac->dirfd, name, 0) < 0 && errno != ENOENT)
			log_warn("ssh-agent: cannot remove %s/%s: %s", CERTS_DIR, name, strerror(errno));
		agent_out_free(&o);
		return;
	}
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = o.oom ? -1 : openat(ac->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		size_t off = 0;

		while (off < o.len) {
			ssize_t w = write(fd, o.data + off, o.len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		if (off == o.len && fsync(fd) == 0 && close(fd) == 0) {
			fd = -1;
			if (renameat(ac->dirfd, tmp, ac->dirfd, name) == 0) {
				agent_out_free(&o);
				return;
			}
		}
		if (fd >= 0)
			close(fd);
		unlinkat(ac->dirfd, tmp, 0);
	}
	log_err("ssh-agent: cannot write %s/%s: %s (the certificates of that key are kept in memory only)",
	        CERTS_DIR, name, strerror(errno ? errno : EIO));
	agent_out_free(&o);
}

static bool file_exists(const AgentCerts *ac, const uint8_t pk[32])
{
	char name[65];

	file_name(name, pk);
	return ac->dirfd >= 0 && faccessat(ac->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static int certs_append(AgentCerts *ac, const uint8_t pk[32], const uint8_t *blob, size_t blob_len,
                        const uint8_t *comment, size_t comment_len, bool persist)
{
	CertEntry **tail = &ac->head, *e;

	for (e = ac->head; e; e = e->next) {
		if (e->blob_len == blob_len && memcmp(e->blob, blob, blob_len) == 0) {
			/* the same certificate again: its comment is the new one */
			uint8_t *c = dup_bytes(comment, comment_len);

			if (!c)
				return -ENOMEM;
			free(e->comment);
			e->comment = c;
			e->comment_len = comment_len;
			e->persist = persist;
			return 0;
		}
	}
	if (count_pk(ac, pk) >= AGENT_CERT_MAX)
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	memcpy(e->pk, pk, 32);
	e->blob = dup_bytes(blob, blob_len);
	e->comment = dup_bytes(comment, comment_len);
	if (!e->blob || !e->comment) {
		entry_free(e);
		return -ENOMEM;
	}
	e->blob_len = blob_len;
	e->comment_len = comment_len;
	e->persist = persist;
	while (*tail)
		tail = &(*tail)->next;
	*tail = e;
	return 0;
}

static void certs_load_file(AgentCerts *ac, const char *name)
{
	uint8_t pk[32], *buf;
	size_t pk_len, n = 0;
	struct stat st;
	int fd;

	if (strlen(name) != 64 || sodium_hex2bin(pk, 32, name, 64, NULL, &pk_len, NULL) != 0 || pk_len != 32)
		return;
	fd = openat(ac->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > CERTS_FILE_MAX) {
		log_warn("ssh-agent: ignoring %s/%s: not a readable certificate file", CERTS_DIR, name);
		if (fd >= 0)
			close(fd);
		return;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && n < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		AgentIn in = { buf, n, false };

		while (!in.bad && in.n > 0) {
			const uint8_t *blob, *comment;
			size_t bl, cl;
			AgentCertInfo ci;

			blob = agent_get_string(&in, &bl);
			comment = agent_get_string(&in, &cl);
			if (in.bad || agent_cert_parse(blob, bl, &ci) < 0 || memcmp(ci.pk, pk, 32) != 0) {
				log_warn("ssh-agent: ignoring the rest of %s/%s: not a certificate of that key",
				         CERTS_DIR, name);
				break;
			}
			if (certs_append(ac, pk, blob, bl, comment, cl, true) < 0)
				break;
		}
	}
	free(buf);
}

AgentCerts *agent_certs_new(int statefd)
{
	AgentCerts *ac = calloc(1, sizeof(*ac));
	DIR *d;
	struct dirent *de;
	int fd;

	if (!ac)
		return NULL;
	ac->dirfd = -1;
	if (statefd < 0)
		return ac;
	if (mkdirat(statefd, CERTS_DIR, 0700) < 0 && errno != EEXIST) {
		log_warn("ssh-agent: cannot create %s: %s (certificates are kept in memory only)", CERTS_DIR,
		         strerror(errno));
		return ac;
	}
	ac->dirfd = openat(statefd, CERTS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (ac->dirfd < 0) {
		log_warn("ssh-agent: cannot open %s: %s (certificates are kept in memory only)", CERTS_DIR,
		         strerror(errno));
		return ac;
	}
	fd = dup(ac->dirfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return ac;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.') {
			size_t n = strlen(de->d_name);

			/* an interrupted write */
			if (n > 4 && strcmp(de->d_name + n - 4, ".tmp") == 0)
				unlinkat(ac->dirfd, de->d_name, 0);
			continue;
		}
		certs_load_file(ac, de->d_name);
	}
	closedir(d);
	return ac;
}

void agent_certs_free(AgentCerts *ac)
{
	if (!ac)
		return;
	while (ac->head) {
		CertEntry *e = ac->head;

		ac->head = e->next;
		entry_free(e);
	}
	while (ac->hidden) {
		CertHidden *h = ac->hidden;

		ac->hidden = h->next;
		free(h);
	}
	if (ac->dirfd >= 0)
		close(ac->dirfd);
	free(ac);
}

bool agent_certs_hidden(const AgentCerts *ac, const uint8_t pk[32])
{
	for (const CertHidden *h = ac ? ac->hidden : NULL; h; h = h->next)
		if (memcmp(h->pk, pk, 32) == 0)
			return true;
	return false;
}

static void unhide(AgentCerts *ac, const uint8_t pk[32])
{
	for (CertHidden **p = &ac->hidden; *p;) {
		if (memcmp((*p)->pk, pk, 32) == 0) {
			CertHidden *h = *p;

			*p = h->next;
			free(h);
		} else {
			p = &(*p)->next;
		}
	}
}

void agent_certs_unhide(AgentCerts *ac, const uint8_t pk[32])
{
	if (ac)
		unhide(ac, pk);
}

int agent_certs_add(AgentCerts *ac, const uint8_t pk[32], const uint8_t *blob, size_t blob_len,
                    const uint8_t *comment, size_t comment_len, bool persist)
{
	int r;

	if (!ac)
		return -ENOMEM;
	unhide(ac, pk);
	r = certs_append(ac, pk, blob, blob_len, comment, comment_len, persist);
	if (r < 0)
		return r;
	if (persist || file_exists(ac, pk))
		certs_save(ac, pk);
	return 0;
}

void agent_certs_forget(AgentCerts *ac, const uint8_t pk[32])
{
	bool had = false;

	if (!ac)
		return;
	for (CertEntry **p = &ac->head; *p;) {
		if (memcmp((*p)->pk, pk, 32) == 0) {
			CertEntry *e = *p;

			*p = e->next;
			entry_free(e);
			had = true;
		} else {
			p = &(*p)->next;
		}
	}
	unhide(ac, pk);
	if (had || file_exists(ac, pk))
		certs_save(ac, pk);
}

int agent_certs_resolve(const AgentCerts *ac, const uint8_t *blob, size_t len, uint8_t pk[32])
{
	if (agent_parse_ed25519_blob(blob, len, pk) == 0)
		return agent_certs_hidden(ac, pk) ? -1 : 0;
	/* a certificate sigild holds (checked when it was added) */
	for (const CertEntry *e = ac ? ac->head : NULL; e; e = e->next) {
		if (e->blob_len == len && memcmp(e->blob, blob, len) == 0) {
			memcpy(pk, e->pk, 32);
			return 0;
		}
	}
	return -1;
}

size_t agent_certs_list(const AgentCerts *ac, AgentCertRef *out, size_t max,
                        bool (*listed)(void *ctx, const uint8_t pk[32]), void *ctx)
{
	size_t n = 0;

	for (const CertEntry *e = ac ? ac->head : NULL; e; e = e->next) {
		if (!listed(ctx, e->pk))
			continue;
		if (out && n < max)
			out[n] = (AgentCertRef){ e->pk, e->blob, e->blob_len, e->comment, e->comment_len };
		n++;
	}
	return n;
}

size_t agent_certs_count(const AgentCerts *ac)
{
	size_t n = 0;

	for (const CertEntry *e = ac ? ac->head : NULL; e; e = e->next)
		n++;
	return n;
}

int agent_certs_remove(AgentCerts *ac, const uint8_t *blob, size_t len, uint8_t pk[32])
{
	bool is_cert;

	if (agent_cert_key_of(blob, len, pk, &is_cert) < 0)
		return AGENT_CERTS_NOT_MINE;
	if (!is_cert) {
		CertHidden *h;

		if (count_pk(ac, pk) == 0)
			return AGENT_CERTS_NOT_MINE;
		if (agent_certs_hidden(ac, pk))
			return AGENT_CERTS_NOT_FOUND;
		/* as OpenSSH: the certificates stay usable (here with the key) */
		h = calloc(1, sizeof(*h));
		if (!h)
			return AGENT_CERTS_NOT_MINE;
		memcpy(h->pk, pk, 32);
		h->next = ac->hidden;
		ac->hidden = h;
		return AGENT_CERTS_REMOVED;
	}
	for (CertEntry **p = &ac->head; *p; p = &(*p)->next) {
		CertEntry *e = *p;

		if (e->blob_len != len || memcmp(e->blob, blob, len) != 0)
			continue;
		*p = e->next;
		entry_free(e);
		if (file_exists(ac, pk))
			certs_save(ac, pk);
		if (count_pk(ac, pk) == 0 && agent_certs_hidden(ac, pk)) {
			unhide(ac, pk);
			return AGENT_CERTS_DELETE_KEY;
		}
		return AGENT_CERTS_REMOVED;
	}
	return AGENT_CERTS_NOT_FOUND;
}
