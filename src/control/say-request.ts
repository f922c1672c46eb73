/** The body of a control API's `say` (`POST /calls/{id}/say`, `POST /discord/guilds/{id}/say`). */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { TEXT_MAX_CHARS } from '../speech/limits.js';
import { sendJson } from '../http/http.js';

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
