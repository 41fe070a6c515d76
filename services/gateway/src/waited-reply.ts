import type { CodeRunRecord } from '@islet/protocol';
import type { FastifyReply } from 'fastify';
import { recordJson } from './record.ts';

/** Fastify's own content type for a JSON body it serialises (an object sent). */
export const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A submit's answer (`POST /v1/runs`; on the path that matters, a waited one from its pushed end): the record's JSON — its result
 * spliced in as `resultJson` when the pushed end's text was kept (round 51 `gateway-end`) — sent as
 * text with the content type fastify gives an object, so the same status, headers (names, order,
 * values) and bytes as `reply.send(record)`, on fewer of fastify's steps (round 52 `gateway-reply`):
 * - the body is `JSON.stringify(record)` here, as fastify's default serializer makes it (no route
 *   schema, no reply serializer on this route), so `send` takes its string path: no
 *   `preSerialization` runner, no serializer look-up, no `Object.prototype.toString` of the record;
 * - the route's answer is `undefined` once the reply has ended (its onSend hooks are callbacks:
 *   `send` ends it in this call), so the handler's promise does not adopt the reply as a thenable
 *   (a microtask and `Reply.then`); a reply not yet ended (an async onSend hook) is returned as
 *   fastify asks (`return reply`).
 * Every hook the gateway registers runs as before: `send` still runs onSend (the route's rate count,
 * shutdown's `connection: close`), and onResponse (metrics) listens on the response's `finish`.
 */
export function sendSubmitRecord(
  reply: FastifyReply,
  record: CodeRunRecord,
  resultJson?: string,
): FastifyReply | undefined {
  const body = resultJson ? recordJson(record, resultJson) : JSON.stringify(record);
  reply
    .code(record.result ? 200 : 202)
    .type(JSON_TYPE)
    .send(body);
  return reply.sent ? undefined : reply;
}
