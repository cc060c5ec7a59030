/* SPDX-License-Identifier: MIT */
/*
 * proto.h - sigil's msgpack-rpc messages as typed C structs
 *
 * The wire format (docs/protocol.md is the authoritative spec):
 *   request   [0, msgid, method, [params]]   params: one map
 *   response  [1, msgid, error, result]      error: nil or {"code", "message"}
 * Binary values (keys, seeds, signatures, messages) are msgpack bin; labels,
 * methods, types, modes and policies are msgpack str.
 *
 * Only proto/ includes msgpack.h. The daemon uses the server side
 * (proto_request_decode, proto_response_encode, proto_error_encode), the
 * client library uses the client side (proto_request_encode,
 * proto_response_decode, declared in proto-client.h). Both use ProtoReader to
 * cut a byte stream into frames (one complete top-level msgpack object each)
 * and ProtoBuf for encoded output.
 *
 * proto knows nothing about keys: it checks types and lengths only.
 *
 * Default socket path (sigild and clients agree on it):
 *   $SIGIL_SOCK if set (clients only), else $RUNTIME_DIRECTORY/sigild.sock
 *   under systemd (daemon), else $XDG_RUNTIME_DIR/sigil/sigild.sock, else for
 *   root /run/sigil/sigild.sock.
 */
#ifndef SIGIL_PROTO_H
#define SIGIL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION 1           /* hello.protocol */
#define PROTO_SOCKET_DIR "sigil"  /* under $XDG_RUNTIME_DIR */
#define PROTO_SOCKET_NAME "sigild.sock"
#define PROTO_SOCKET_ROOT "/run/sigil/sigild.sock"
#define PROTO_SERVICE_USER "sigil"  /* User= of the packaged system sigild.service: clients trust its uid */

#define PROTO_LABEL_MAX 64        /* labels match [A-Za-z0-9._@+-]{1,64} */
#define PROTO_CONTEXT_MAX 255     /* RFC 8032 context length limit */
#define PROTO_PASSPHRASE_MAX 1024
#define PROTO_PATH_MAX 4096 /* rekey master_key_file, NUL included */
#define PROTO_FINGERPRINT_MAX 64  /* "SHA256:" + 43 base64 chars + NUL = 51 */
#define PROTO_MESSAGE_MAX 256     /* error message text, NUL included */
#define PROTO_KEY_LEN 32          /* public keys, seeds, X25519 peers, secrets */
#define PROTO_SIG_LEN 64
#define PROTO_DIGEST_LEN 64       /* SHA-512 digest for prehashed ph */
#define PROTO_AGE_FILE_KEY_LEN 16 /* age.unwrap's file_key */
#define PROTO_AGE_BODY_LEN 32     /* an age X25519 stanza body */
#define PROTO_AGE_RECIPIENT_MAX 128 /* "age1..." (62 chars for X25519), NUL excluded */

/* Default limits (sigild's config may change them). */
#define PROTO_DEFAULT_MAX_FRAME (64u * 1024 * 1024)
#define PROTO_MAX_OBJECTS_PER_FRAME (1u << 20) /* msgpack objects in one frame */
#define PROTO_MAX_DEPTH 16                     /* nesting depth of one frame */

/**
 * enum ProtoError - error codes of the protocol (DESIGN.md). 0 is success;
 * the positive values travel as the "code" string of the error map.
 */
typedef enum ProtoError {
	PROTO_OK = 0,
	PROTO_E_BAD_REQUEST,    /* "bad_request" */
	PROTO_E_UNKNOWN_METHOD, /* "unknown_method" */
	PROTO_E_NOT_FOUND,      /* "not_found" */
	PROTO_E_EXISTS,         /* "exists" */
	PROTO_E_WRONG_TYPE,     /* "wrong_type" */
	PROTO_E_LOCKED,         /* "locked" */
	PROTO_E_DENIED,         /* "denied" */
	PROTO_E_BUSY,           /* "busy" */
	PROTO_E_TOO_LARGE,      /* "too_large" */
	PROTO_E_INVALID_KEY,    /* "invalid_key" */
	PROTO_E_INTERNAL,       /* "internal" */
	PROTO_E_NO_MATCH,       /* "no_match": an age stanza or file is not for the key */
	_PROTO_E_N,
} ProtoError;

typedef enum ProtoMethod {
	PROTO_METHOD_HELLO = 0,   /* "hello" */
	PROTO_METHOD_STATUS,      /* "status" */
	PROTO_METHOD_KEY_GENERATE,/* "key.generate" */
	PROTO_METHOD_KEY_IMPORT,  /* "key.import" */
	PROTO_METHOD_KEY_LIST,    /* "key.list" */
	PROTO_METHOD_KEY_PUBLIC,  /* "key.public" */
	PROTO_METHOD_KEY_DELETE,  /* "key.delete" */
	PROTO_METHOD_SIGN,        /* "sign" */
	PROTO_METHOD_VERIFY,      /* "verify" */
	PROTO_METHOD_VERIFY_BATCH,/* "verify_batch" */
	PROTO_METHOD_DH,          /* "dh" */
	PROTO_METHOD_LOCK,        /* "lock" */
	PROTO_METHOD_UNLOCK,      /* "unlock" */
	PROTO_METHOD_REKEY,       /* "rekey" */
	PROTO_METHOD_AUDIT,       /* "audit" */
	PROTO_METHOD_KEY_EXPORT,  /* "key.export" */
	PROTO_METHOD_AGE_UNWRAP,  /* "age.unwrap" */
	PROTO_METHOD_KEY_EXPORT_WRAPPED, /* "key.export_wrapped" */
	PROTO_METHOD_KEY_IMPORT_WRAPPED, /* "key.import_wrapped" */
	_PROTO_METHOD_N,
	PROTO_METHOD_UNKNOWN = -1,
} ProtoMethod;

typedef enum ProtoKeyType {
	PROTO_KEY_ED25519 = 0,    /* "ed25519" */
	PROTO_KEY_X25519,         /* "x25519" */
} ProtoKeyType;

typedef enum ProtoSignMode {
	PROTO_MODE_PURE = 0,      /* "pure": Ed25519 (default) */
	PROTO_MODE_CTX,           /* "ctx": Ed25519ctx, context 1..255 bytes */
	PROTO_MODE_PH,            /* "ph": Ed25519ph, context 0..255 bytes */
} ProtoSignMode;

typedef enum ProtoPolicy {
	PROTO_POLICY_STRICT = 0,  /* "strict" (default) */
	PROTO_POLICY_ZIP215,      /* "zip215" */
} ProtoPolicy;

/* A byte string that the struct does not own (a pointer into a frame for
 * decoded requests, into the caller's memory for requests to encode). */
typedef struct ProtoBytes {
	const uint8_t *data;
	size_t len;
} ProtoBytes;

typedef struct ProtoVerifyItem {
	const uint8_t *public_key; /* 32 bytes */
	const uint8_t *signature;  /* 64 bytes */
	ProtoBytes message;
} ProtoVerifyItem;

/**
 * struct ProtoRequest - one decoded (or to-be-encoded) request.
 * @msgid:  the msgpack-rpc msgid (uint32 on the wire, any uint64 accepted)
 * @method: selects the member of @u; hello, status, key.list carry no params
 *
 * A request decoded by proto_request_decode() points into the frame it was
 * decoded from: keep the frame alive and unchanged until
 * proto_request_deinit(). Labels are copied and NUL-terminated.
 *
 * Optional params and their defaults: key.generate/key.import exportable
 * (false); sign mode (pure), context (empty), prehashed (false: when true,
 * mode must be "ph" and message is the 64-byte SHA-512 of the message);
 * verify policy (strict), mode (pure), context (empty), prehashed (false);
 * verify_batch policy (strict); lock/unlock passphrase (absent);
 * key.generate/key.import policy (absent: NULL).
 */
/*
 * struct ProtoKeyPolicy - the per-key policy (docs/security.md), param and
 * key info field "policy": {ops: [str], expires: int, uids: [int],
 * gids: [int], exes: [str], max_signs: int, rate: int}, every field
 * optional. @set is false for the defaults (no "policy" field on the wire).
 * Requests and key infos hold a pointer to one (NULL: no policy), so that
 * the structs every request carries stay small.
 */
#define PROTO_POLICY_IDS_MAX 16
#define PROTO_POLICY_EXES_MAX 4
#define PROTO_POLICY_EXE_MAX 256  /* path bytes, NUL included */
/* age-unwrap (age.unwrap) is an op of its own: a key whose ops name only
 * "dh" may not unwrap age files (docs/age.md) */
enum { PROTO_OP_SIGN = 1u << 0, PROTO_OP_DH = 1u << 1, PROTO_OP_AGE_UNWRAP = 1u << 2 };
#define PROTO_OPS_ALL (PROTO_OP_SIGN | PROTO_OP_DH | PROTO_OP_AGE_UNWRAP)
typedef struct ProtoKeyPolicy {
	bool set;
	uint32_t ops;          /* PROTO_OP_*; 0: the operation of the key's type */
	int64_t expires;       /* unix seconds; 0: never */
	uint32_t uids[PROTO_POLICY_IDS_MAX];
	size_t n_uids;         /* uids and gids: 0 for both = any peer sigild lets in */
	uint32_t gids[PROTO_POLICY_IDS_MAX];
	size_t n_gids;
	char exes[PROTO_POLICY_EXES_MAX][PROTO_POLICY_EXE_MAX]; /* absolute paths */
	size_t n_exes;         /* 0: any executable */
	uint64_t max_signs;    /* 0: no limit (counted since sigild started) */
	uint32_t rate;         /* operations per minute; 0: no limit */
} ProtoKeyPolicy;

typedef struct ProtoRequest {
	uint64_t msgid;
	ProtoMethod method;
	union {
		struct {
			ProtoKeyType type;
			char label[PROTO_LABEL_MAX + 1];
			bool exportable;
			const ProtoKeyPolicy *policy; /* NULL: none; decoder-owned (priv) */
		} key_generate;
		struct {
			ProtoKeyType type;
			char label[PROTO_LABEL_MAX + 1];
			const uint8_t *seed; /* 32 bytes, secret */
			bool exportable;
			const ProtoKeyPolicy *policy; /* NULL: none; decoder-owned (priv) */
		} key_import;
		struct {
			char label[PROTO_LABEL_MAX + 1];
		} key_public, key_delete, key_export;
		struct {
			char label[PROTO_LABEL_MAX + 1]; /* param "key" */
			ProtoBytes message;
			ProtoSignMode mode;
			ProtoBytes context;
			bool prehashed;
		} sign;
		struct {
			const uint8_t *public_key; /* 32 bytes */
			const uint8_t *signature;  /* 64 bytes */
			ProtoBytes message;
			ProtoPolicy policy;
			ProtoSignMode mode;
			ProtoBytes context;
			bool prehashed;
		} verify;
		struct {
			const ProtoVerifyItem *items; /* param "items" */
			size_t n_items;
			ProtoPolicy policy;
		} verify_batch;
		struct {
			char label[PROTO_LABEL_MAX + 1]; /* param "key" */
			const uint8_t *peer;             /* 32 bytes */
		} dh;
		struct {
			char label[PROTO_LABEL_MAX + 1]; /* param "key" */
			const uint8_t *share;            /* 32 bytes: the stanza's ephemeral share */
			const uint8_t *body;             /* 32 bytes: the stanza's body */
		} age_unwrap;
		struct {
			char label[PROTO_LABEL_MAX + 1];
			char recipient[PROTO_AGE_RECIPIENT_MAX + 1]; /* "age1..." */
			bool armor;
		} key_export_wrapped;
		struct {
			char label[PROTO_LABEL_MAX + 1]; /* the new key's label */
			char key[PROTO_LABEL_MAX + 1];   /* the X25519 key that opens the file */
			ProtoBytes file;                 /* the age file */
		} key_import_wrapped;
		struct {
			bool has_passphrase;
			ProtoBytes passphrase; /* str or bin, <= PROTO_PASSPHRASE_MAX */
			/* rekey only: param "master_key_file", the new master key's
			 * file (absolute, < PROTO_PATH_MAX bytes); NULL: absent.
			 * Decoder-owned (priv). */
			const char *master_key_file;
		} lock, unlock, rekey; /* rekey: the new passphrase, or master_key_file */
		struct {
			uint64_t limit;       /* the last lines to return (default 100) */
		} audit;
	} u;
	void *priv; /* decoder-owned storage (verify_batch items); NULL otherwise */
} ProtoRequest;

#define PROTO_REQUEST_NULL(_x) { .method = PROTO_METHOD_UNKNOWN, .priv = NULL }

typedef struct ProtoKeyInfo {
	char label[PROTO_LABEL_MAX + 1];
	ProtoKeyType type;
	uint8_t public_key[PROTO_KEY_LEN];
	char fingerprint[PROTO_FINGERPRINT_MAX]; /* "SHA256:..." as ssh-keygen -l */
	bool exportable;
	int64_t created; /* unix time, seconds */
	const ProtoKeyPolicy *policy; /* "policy"; NULL: absent (not owned) */
	bool has_owner;               /* "owner" on the wire (sigild always sends it) */
	uint32_t owner;               /* the uid that created, imported or ssh-added the key */
} ProtoKeyInfo;

typedef struct ProtoStatus {
	uint64_t keys;
	bool locked;
	uint64_t connections;
	uint64_t inflight;
	uint64_t uptime_s;
	uint64_t requests; /* requests answered since start */
	uint64_t workers;
} ProtoStatus;

/**
 * struct ProtoResponse - one response.
 * @msgid, @has_msgid: has_msgid is false only for errors about a frame whose
 *                    msgid could not be read (sent with msgid nil)
 * @method:  which member of @u holds the result (when @error is PROTO_OK);
 *           the method is not on the wire: a client knows it from its msgid
 * @error:   PROTO_OK or the error code; then @message says why
 *
 * key.generate, key.import, key.import_wrapped and key.public fill @u.key; key.delete, lock and
 * unlock have an empty result map.
 * @status_buffered_bytes: the status result's "buffered_bytes" (outside
 *           ProtoStatus to keep that struct's layout stable)
 */
typedef struct ProtoResponse {
	uint64_t msgid;
	bool has_msgid;
	ProtoMethod method;
	ProtoError error;
	char message[PROTO_MESSAGE_MAX];
	uint64_t status_buffered_bytes;
	union {
		struct {
			uint64_t protocol;
			const char *server;
			const char *const *features;
			size_t n_features;
		} hello;
		ProtoStatus status;
		ProtoKeyInfo key;
		struct {
			const ProtoKeyInfo *keys;
			size_t n_keys;
		} key_list;
		struct {
			uint8_t signature[PROTO_SIG_LEN];
		} sign;
		struct {
			bool valid;
		} verify;
		struct {
			const bool *valid;
			size_t n;
		} verify_batch;
		struct {
			uint8_t shared_secret[PROTO_KEY_LEN]; /* secret: wipe after use */
		} dh;
		struct {
			uint64_t keys;        /* re-sealed */
		} rekey;
		struct {
			uint8_t seed[PROTO_KEY_LEN]; /* secret: wipe after use */
		} key_export;
		struct {
			const char *const *lines;
			size_t n;
		} audit;
		struct {
			uint8_t file_key[PROTO_AGE_FILE_KEY_LEN]; /* secret: wipe after use */
		} age_unwrap;
		struct {
			ProtoBytes file; /* the age file (not owned) */
		} key_export_wrapped;
	} u;
	void *priv; /* decoder-owned storage (client side); NULL otherwise */
} ProtoResponse;

/* A growable output buffer. Wiped before its memory is released. */
typedef struct ProtoBuf {
	uint8_t *data;
	size_t len;
	size_t cap;
} ProtoBuf;

#define PROTO_BUF_NULL(_x) { .data = NULL, .len = 0, .cap = 0 }

void proto_buf_init(ProtoBuf *b);
/* wipes and frees the contents; the buffer is empty and reusable after */
void proto_buf_deinit(ProtoBuf *b);
/* zero n bytes at p with stores the compiler must keep (no secret stays
 * behind in a buffer that is freed or reused) */
void proto_wipe(void *p, size_t n);
/* append n bytes. Return: 0 or -ENOMEM */
int proto_buf_append(ProtoBuf *b, const void *data, size_t n);
/* hands the memory to the caller (free() it); the buffer is empty after */
uint8_t *proto_buf_steal(ProtoBuf *b, size_t *lenp);

/* names on the wire; NULL for out-of-range values */
const char *proto_error_name(ProtoError e);
const char *proto_method_name(ProtoMethod m);
const char *proto_key_type_name(ProtoKeyType t);
const char *proto_mode_name(ProtoSignMode m);
const char *proto_policy_name(ProtoPolicy p);
/* -1 (PROTO_METHOD_UNKNOWN / -1) when the name is unknown */
ProtoMethod proto_method_from_name(const char *s, size_t n);
int proto_error_from_name(const char *s, size_t n); /* ProtoError or -1 */
int proto_key_type_from_name(const char *s, size_t n); /* ProtoKeyType or -1 */
/* true if s[0..n) matches [A-Za-z0-9._@+-]{1,64} */
bool proto_label_valid(const char *s, size_t n);

/**
 * ProtoReader - cuts a byte stream into frames without decoding them.
 *
 * The reader scans the msgpack structure as bytes arrive (it stores the
 * bytes of the current frame only) and knows a frame's total size as soon
 * as its headers are read, so a frame larger than @max_frame is refused
 * before its body is read. It also bounds the number of objects
 * (PROTO_MAX_OBJECTS_PER_FRAME) and the depth (PROTO_MAX_DEPTH) of a frame.
 */
typedef struct ProtoReader ProtoReader;

enum {
	PROTO_READER_NONE = 0,    /* no complete frame buffered yet */
	PROTO_READER_FRAME = 1,   /* a frame was returned */
	PROTO_READER_E_INVALID,   /* bytes that are not msgpack (0xc1), or nested too deep */
	PROTO_READER_E_TOO_LARGE, /* the frame exceeds max_frame or PROTO_MAX_OBJECTS_PER_FRAME */
};

/* Return: 0 or -ENOMEM */
int proto_reader_new(ProtoReader **readerp, size_t max_frame);
ProtoReader *proto_reader_free(ProtoReader *r);
void proto_reader_set_max_frame(ProtoReader *r, size_t max_frame);

/**
 * proto_reader_feed() - append received bytes.
 * Return: 0, -ENOMEM, PROTO_READER_E_INVALID or PROTO_READER_E_TOO_LARGE.
 * After an error the reader is dead (every later call returns the same
 * error): answer and close the connection; proto_reader_msgid() may tell
 * the msgid of the refused frame.
 */
int proto_reader_feed(ProtoReader *r, const void *data, size_t n);

/**
 * proto_reader_next() - the next complete frame, if any.
 * @framep, @lenp: set to the frame; valid until the next feed/next/free call
 * Return: PROTO_READER_FRAME, PROTO_READER_NONE, PROTO_READER_E_INVALID or
 * PROTO_READER_E_TOO_LARGE (errors in frames after the first are found here).
 */
int proto_reader_next(ProtoReader *r, const uint8_t **framep, size_t *lenp);

/**
 * proto_reader_detach() - take the buffer holding the frame
 * proto_reader_next() just returned, instead of copying a long frame.
 * @frame, @len: that frame
 * @basep: set to the buffer (the caller's: free() it)
 * @usedp: set to the bytes of it that were written: [0, frame) may hold
 *         earlier frames of the stream (wipe them, they may have carried
 *         secrets), then the frame
 *
 * Only when nothing is buffered after the frame; the reader then goes on
 * with an empty buffer of its own.
 * Return: @frame (now inside *basep), or NULL when not possible (copy it).
 */
uint8_t *proto_reader_detach(ProtoReader *r, const uint8_t *frame, size_t len, uint8_t **basep, size_t *usedp);

/* bytes buffered and not yet returned as frames (memory accounting) */
size_t proto_reader_buffered(const ProtoReader *r);
/* true if bytes of an incomplete frame are buffered */
bool proto_reader_partial(const ProtoReader *r);
/* the msgid of the current (partial) frame if its header was read: 0 or -1 */
int proto_reader_msgid(const ProtoReader *r, uint64_t *msgidp);

/**
 * proto_request_decode() - decode one request frame (server side).
 * @req:     output; on any return, call proto_request_deinit() afterwards
 * @frame, @len: one frame from ProtoReader; must outlive @req
 * @errmsg:  on a positive return, why (names the field), NUL-terminated
 *
 * Every parameter is type-checked: bin vs str vs int/bool, lengths of keys
 * (32), signatures (64), seeds (32), peers (32), contexts (<= 255), labels.
 * Unknown fields are ignored; a missing required field is a bad_request
 * naming it. req->msgid is set whenever it could be read (check *has_msgidp).
 *
 * Return: 0, -ENOMEM, PROTO_E_BAD_REQUEST or PROTO_E_UNKNOWN_METHOD.
 */
int proto_request_decode(ProtoRequest *req, bool *has_msgidp, const uint8_t *frame, size_t len,
                         char errmsg[PROTO_MESSAGE_MAX]);
void proto_request_deinit(ProtoRequest *req);

/**
 * proto_request_rebase() - a decoded request whose frame was copied.
 * @req:  decoded by proto_request_decode() from @from (@len bytes)
 * @to:   a copy of those @len bytes
 *
 * Moves @req's pointers into the frame to the same offsets in @to, so that
 * @req is what decoding @to would give (a kept request need not be decoded
 * twice). Only for the methods whose fields it knows: sign, verify, dh,
 * age.unwrap, those without pointers, and verify_batch, whose items array
 * (decoder storage, req->priv) is rebased in place: it stays @req's, so a
 * copy of @req that is then rebased takes it over (the original must not
 * be deinitialised after that, only forgotten).
 *
 * Return: 0, or -1 (@req unchanged): decode @to instead.
 */
int proto_request_rebase(ProtoRequest *req, const uint8_t *from, const uint8_t *to, size_t len);

/**
 * proto_response_encode() - append one response frame to @out (server side).
 * Encodes an error response when resp->error != PROTO_OK.
 * Return: 0 or -ENOMEM (then @out is unchanged in length).
 */
int proto_response_encode(ProtoBuf *out, const ProtoResponse *resp);

/* An error response; msgid is nil when !has_msgid. Return: 0 or -ENOMEM. */
int proto_error_encode(ProtoBuf *out, bool has_msgid, uint64_t msgid, ProtoError code,
                       const char *message);

#endif /* SIGIL_PROTO_H */
