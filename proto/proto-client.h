/* SPDX-License-Identifier: MIT */
/*
 * proto-client.h - the client side of the protocol: encode requests,
 * decode responses (used by libsigil in client/)
 *
 * The server side (proto_request_decode, proto_response_encode) and the
 * shared types are in proto.h. Frames are cut from the byte stream with
 * ProtoReader (proto.h).
 */
#ifndef SIGIL_PROTO_CLIENT_H
#define SIGIL_PROTO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/**
 * proto_request_encode() - append one request frame to @out.
 * @out: output buffer (wiped when freed: requests may carry seeds)
 * @req: the request; @req->method selects the member of @req->u
 *
 * Optional params are written only when they differ from their defaults
 * (exportable false, mode pure, empty context, prehashed false, policy
 * strict, no passphrase), so a request to an older daemon stays minimal.
 * Nothing is checked beyond what encoding needs: the daemon validates.
 *
 * Return: 0, -ENOMEM or -EINVAL (unknown method or enum value); on error
 * @out keeps its previous length.
 */
int proto_request_encode(ProtoBuf *out, const ProtoRequest *req);

/**
 * proto_response_msgid() - read the msgid of a response frame, so that the
 * caller can look up which method it answers.
 * Return: 0 (msgid in *msgidp, or *has_msgidp false for a nil msgid),
 * -ENOMEM, or PROTO_E_BAD_REQUEST when the frame is not a response.
 *
 * Both decoders accept any bytes: the frame is checked with ProtoReader
 * (complete, one object, bounded object count) before msgpack-c sees it.
 */
int proto_response_msgid(const uint8_t *frame, size_t len, bool *has_msgidp, uint64_t *msgidp);

/**
 * proto_response_decode() - decode one response frame (client side).
 * @resp:   output; call proto_response_deinit() after any return
 * @method: the method of the request this answers (from its msgid)
 * @frame, @len: one frame from ProtoReader (may be freed after return:
 *          everything is copied into @resp)
 * @errmsg: on PROTO_E_BAD_REQUEST, what is malformed
 *
 * An error response gives 0 with resp->error set to its code (an unknown
 * code string becomes PROTO_E_INTERNAL, its name kept in the message) and
 * resp->message to its message. A result that lacks a field, or has one of
 * the wrong type or length, is PROTO_E_BAD_REQUEST ("malformed response").
 * Unknown result fields are ignored.
 *
 * Return: 0, -ENOMEM or PROTO_E_BAD_REQUEST.
 */
int proto_response_decode(ProtoResponse *resp, ProtoMethod method, const uint8_t *frame,
                          size_t len, char errmsg[PROTO_MESSAGE_MAX]);
/* frees decoder-owned storage and wipes the shared secret of a dh result */
void proto_response_deinit(ProtoResponse *resp);

#endif /* SIGIL_PROTO_CLIENT_H */
