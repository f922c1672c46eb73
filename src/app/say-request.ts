/** The body of a control API's `say` (`POST /calls/{id}/say`, `POST /discord/guilds/{id}/say`). */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { TEXT_MAX_CHARS } from '../speech/limits.js';
import { sendJson } from './http.js';

export const sayRequest = z.strictObject({
  /** Split into sentences and requested one ahead, so it may be far longer than one request's text. */
  text: z
    .string()
    .min(1)
    .max(TEXT_MAX_CHARS * 20),
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
