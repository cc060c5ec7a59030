/* SPDX-License-Identifier: MIT */
/*
 * proto-reader.c - cut a msgpack byte stream into frames
 *
 * The reader does not decode: it walks the msgpack headers of the current
 * frame as bytes arrive, keeping a stack of "elements left" per open
 * container. A frame ends when its top-level object is complete. Because
 * str/bin/ext headers declare their length, and every array/map element
 * takes at least one byte, the reader knows a lower bound of the frame size
 * early and refuses a frame larger than max_frame before its body arrives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto-private.h"

struct ProtoReader {
	uint8_t *buf;      /* buffered bytes: [start, len) are unconsumed */
	size_t start;      /* offset of the current frame */
	size_t len;
	size_t cap;
	size_t max_frame;

	/* scan state of the current frame; offsets relative to start */
	size_t pos;        /* next header to read */
	size_t objects;
	unsigned depth;
	uint64_t left[PROTO_MAX_DEPTH]; /* elements left in each open container */
	bool complete;     /* [start, start + pos) is a complete frame */
	size_t want;       /* bytes of the frame (from start) the object being read needs, or 0 */
	int error;         /* sticky PROTO_READER_E_* */
};

int proto_reader_new(ProtoReader **readerp, size_t max_frame)
{
	ProtoReader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->max_frame = max_frame;
	*readerp = r;
	return 0;
}

ProtoReader *proto_reader_free(ProtoReader *r)
{
	if (r) {
		if (r->buf) {
			proto_wipe(r->buf, r->cap);
			free(r->buf);
		}
		free(r);
	}
	return NULL;
}

void proto_reader_set_max_frame(ProtoReader *r, size_t max_frame)
{
	r->max_frame = max_frame;
}

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/*
 * Read the header at p (avail bytes available). Sets *hdrp to the header
 * length, *payloadp to the bytes that follow it, *countp to the number of
 * child objects (arrays: n, maps: 2n). Return: 1 done, 0 need more bytes,
 * -1 invalid byte.
 */
static int header(const uint8_t *p, size_t avail, size_t *hdrp, uint64_t *payloadp, uint64_t *countp)
{
	uint8_t b = p[0];
	unsigned lenbytes = 0;
	uint64_t payload = 0, count = 0;
	size_t hdr = 1;
	int kind = 0; /* 0 fixed payload, 1 length-prefixed, 2 array, 3 map, 4 ext */

	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
		payload = 0;
	} else if (b >= 0x80 && b <= 0x8f) {
		count = 2u * (b & 0x0f);
	} else if (b >= 0x90 && b <= 0x9f) {
		count = b & 0x0f;
	} else if (b >= 0xa0 && b <= 0xbf) {
		payload = b & 0x1f;
	} else {
		switch (b) {
		case 0xc1:
			return -1;
		case 0xc4: case 0xd9: lenbytes = 1; kind = 1; break;
		case 0xc5: case 0xda: lenbytes = 2; kind = 1; break;
		case 0xc6: case 0xdb: lenbytes = 4; kind = 1; break;
		case 0xc7: lenbytes = 1; kind = 4; break;
		case 0xc8: lenbytes = 2; kind = 4; break;
		case 0xc9: lenbytes = 4; kind = 4; break;
		case 0xca: payload = 4; break;
		case 0xcb: payload = 8; break;
		case 0xcc: case 0xd0: payload = 1; break;
		case 0xcd: case 0xd1: payload = 2; break;
		case 0xce: case 0xd2: payload = 4; break;
		case 0xcf: case 0xd3: payload = 8; break;
		case 0xd4: payload = 2; break;
		case 0xd5: payload = 3; break;
		case 0xd6: payload = 5; break;
		case 0xd7: payload = 9; break;
		case 0xd8: payload = 17; break;
		case 0xdc: lenbytes = 2; kind = 2; break;
		case 0xdd: lenbytes = 4; kind = 2; break;
		case 0xde: lenbytes = 2; kind = 3; break;
		case 0xdf: lenbytes = 4; kind = 3; break;
		default:
			return -1;
		}
	}
	if (lenbytes) {
		uint64_t n;

		if (avail < 1 + (size_t)lenbytes)
			return 0;
		n = be(p + 1, lenbytes);
		hdr = 1 + lenbytes;
		switch (kind) {
		case 1: payload = n; break;
		case 2: count = n; break;
		case 3: count = 2 * n; break;
		case 4: payload = n + 1; break; /* type byte + data */
		default: break;
		}
	}
	*hdrp = hdr;
	*payloadp = payload;
	*countp = count;
	return 1;
}

/* Scan the current frame as far as the buffered bytes go. */
static int scan(ProtoReader *r)
{
	const uint8_t *f;
	size_t avail = r->len - r->start;

	/* a reader that was never fed has no buffer: NULL + 0 is undefined */
	if (!r->buf)
		return 0;
	f = r->buf + r->start;
	r->want = 0;
	while (!r->complete && r->pos < avail) {
		size_t hdr;
		uint64_t payload, count;
		int k = header(f + r->pos, avail - r->pos, &hdr, &payload, &count);

		if (k < 0)
			return r->error = PROTO_READER_E_INVALID;
		if (k == 0)
			return 0;
		if (++r->objects > PROTO_MAX_OBJECTS_PER_FRAME)
			return r->error = PROTO_READER_E_TOO_LARGE;
		/* lower bound of the frame size: this object, plus one byte per
		 * element still expected by this and every open container */
		{
			uint64_t need = (uint64_t)r->pos + hdr + payload + count;

			for (unsigned i = 0; i < r->depth; i++)
				need += r->left[i] > 0 ? r->left[i] - 1 : 0;
			if (need > r->max_frame)
				return r->error = PROTO_READER_E_TOO_LARGE;
		}
		if (payload > avail - r->pos - hdr) {
			r->want = r->pos + hdr + (size_t)payload; /* (<= max_frame: checked above) */
			return 0; /* wait for the whole payload */
		}
		r->pos += hdr + (size_t)payload;
		if (count > 0) {
			if (r->depth >= PROTO_MAX_DEPTH)
				return r->error = PROTO_READER_E_INVALID;
			r->left[r->depth++] = count;
			continue;
		}
		/* one element complete; close the containers it completes */
		for (;;) {
			if (r->depth == 0) {
				r->complete = true;
				break;
			}
			if (--r->left[r->depth - 1] > 0)
				break;
			r->depth--;
		}
	}
	return 0;
}

int proto_reader_feed(ProtoReader *r, const void *data, size_t n)
{
	if (r->error)
		return r->error;
	if (r->start > 0 && (r->start == r->len || r->start >= r->cap / 2)) {
		size_t old_len = r->len;

		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->start = 0;
		/* consumed frames may have carried seeds: do not leave copies */
		proto_wipe(r->buf + r->len, old_len - r->len);
	}
	if (n > r->cap - r->len) {
		size_t cap = r->cap ? r->cap : 4096;
		uint8_t *p;

		while (cap - r->len < n) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		/* a long payload whose length is known: its size at once, not
		 * by doublings that each copy (and wipe) all bytes so far */
		if (r->want && r->want - (r->len - r->start) > n && r->start + r->want > cap)
			cap = r->start + r->want;
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		if (r->buf) {
			memcpy(p, r->buf, r->len);
			proto_wipe(r->buf, r->cap);
			free(r->buf);
		}
		r->buf = p;
		r->cap = cap;
	}
	if (n > 0) { /* an empty feed may come with no buffer at all */
		memcpy(r->buf + r->len, data, n);
		r->len += n;
	}
	return scan(r);
}

int proto_reader_next(ProtoReader *r, const uint8_t **framep, size_t *lenp)
{
	int k;

	if (r->error)
		return r->error;
	k = scan(r);
	if (k)
		return k;
	if (!r->complete)
		return PROTO_READER_NONE;
	*framep = r->buf + r->start;
	*lenp = r->pos;
	/* the frame stays in the buffer until the next call; the caller copies it */
	r->start += r->pos;
	r->pos = 0;
	r->objects = 0;
	r->depth = 0;
	r->complete = false;
	return PROTO_READER_FRAME;
}

uint8_t *proto_reader_detach(ProtoReader *r, const uint8_t *frame, size_t len, uint8_t **basep, size_t *usedp)
{
	if (!r->buf || r->error || frame < r->buf || frame + len != r->buf + r->start || r->start != r->len)
		return NULL;
	*basep = r->buf;
	*usedp = r->len;
	r->buf = NULL;
	r->start = r->len = r->cap = 0;
	r->want = 0;
	return (uint8_t *)frame;
}

size_t proto_reader_buffered(const ProtoReader *r)
{
	return r->len - r->start;
}

bool proto_reader_partial(const ProtoReader *r)
{
	return r->len > r->start;
}

int proto_reader_msgid(const ProtoReader *r, uint64_t *msgidp)
{
	const uint8_t *f = r->buf ? r->buf + r->start : NULL;
	size_t avail = r->len - r->start, i;

	if (!f || avail < 3)
		return -1;
	if (f[0] == 0x94)
		i = 1;
	else if (avail >= 5 && f[0] == 0xdc && f[1] == 0 && f[2] == 4)
		i = 3;
	else
		return -1;
	if (f[i] != 0x00)
		return -1; /* not a request */
	i++;
	if (i >= avail)
		return -1;
	if (f[i] <= 0x7f) {
		*msgidp = f[i];
		return 0;
	}
	{
		unsigned n = f[i] == 0xcc ? 1 : f[i] == 0xcd ? 2 : f[i] == 0xce ? 4 : f[i] == 0xcf ? 8 : 0;

		if (!n || avail - i - 1 < n)
			return -1;
		*msgidp = be(f + i + 1, n);
	}
	return 0;
}
