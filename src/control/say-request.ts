/** The body of a control API's `say` (`POST /calls/{id}/say`, `POST /discord/guilds/{id}/say`). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { TEXT_MAX_CHARS } from '../speech/limits.js';
import { isJsonType, presentedAuthorization, readJsonBody, readTextStream, sendJson } from '../http/http.js';

/** Split into sentences and requested one ahead, so a say may be far longer than one request's text. */
export const SAY_MAX_CHARS = TEXT_MAX_CHARS * 20;
/**
 * The largest say body: the longest text at 6 bytes per UTF-16 unit (JSON's `\uXXXX` escape, the worst
 * any encoder writes; UTF-8 needs at most 3), plus room for the other fields. So a text the schema
 * accepts is never refused as too large, and nothing much larger is read.
 */
export const SAY_MAX_BODY_BYTES = SAY_MAX_CHARS * 6 + 4096;

export const sayRequest = z.strictObject({
  text: z
    .string()
    .max(SAY_MAX_CHARS)
    .refine((t) => t.trim().length > 0, 'text must not be empty'),
  voice_id: z.string().min(1).optional(),
  interruptible: z.boolean().optional(),
  /** Speak before the queue (cutting what plays now when it may be cut). */
  now: z.boolean().optional(),
  /** false: answer 202 with the utterance id(s) at once instead of waiting for the result. */
  wait: z.boolean().optional(),
});

export type SayRequest = z.infer<typeof sayRequest>;

/** 400 naming the first bad parameter. */
export function sendInvalid(res: ServerResponse, error: z.ZodError): void {
  const issue = error.issues[0]!;
  sendJson(res, 400, { error: issue.message, param: issue.path.join('.') || null });
}

/** A say's options in the query string, for a text body streamed as `text/plain`. */
const flag = z.enum(['true', 'false']).transform((v) => v === 'true');
const sayQuery = z.strictObject({
  voice_id: z.string().min(1).optional(),
  interruptible: flag.optional(),
  now: flag.optional(),
  wait: flag.optional(),
});

/** A say as the control APIs take it: its text whole, or streamed as it arrives. */
export type SayInput = Omit<SayRequest, 'text'> & { text: string | AsyncIterable<string> };

const TEXT_TYPE = /^text\/plain\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

/**
 * Reads a say: `application/json` (`SayRequest`), or a `text/plain` (UTF-8) body spoken while it
 * arrives, its options in the query string (`?voice_id=&interruptible=&now=&wait=`), sent by PUT (with
 * no Content-Type too: what `curl -T -` sends) or by POST with an `Authorization` header. Undefined once
 * it answered an error.
 */
export async function readSay(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<SayInput | undefined> {
  const type = req.headers['content-type'];
  const streamed = type === undefined ? req.method === 'PUT' : TEXT_TYPE.test(type);
  // A web page can POST text/plain to any site without a preflight, and has no other way to reach a
  // loopback server than such "simple" requests: a streamed text needs PUT, or an Authorization header,
  // neither of which a page can send without the CORS consent this server never gives.
  const preflighted = req.method === 'PUT' || presentedAuthorization(req);
  if ((!streamed && !isJsonType(type)) || (streamed && !preflighted)) {
    req.resume();
    sendJson(res, 415, {
      error:
        'say takes Content-Type: application/json, or a text/plain (UTF-8) body spoken as it arrives by PUT ' +
        '(curl -T -) or by POST with the control token',
    });
    return undefined;
  }
  if (!streamed) {
    const read = await readJsonBody(req, res, SAY_MAX_BODY_BYTES);
    if (!read) return undefined;
    const parsed = sayRequest.safeParse(read.body);
    if (parsed.success) return parsed.data;
    sendInvalid(res, parsed.error);
    return undefined;
  }
  const query = sayQuery.safeParse(Object.fromEntries(url.searchParams));
  if (!query.success) {
    req.resume();
    sendInvalid(res, query.error);
    return undefined;
  }
  return { ...query.data, text: readTextStream(req, SAY_MAX_CHARS) };
}
