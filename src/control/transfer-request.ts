/**
 * A transfer as an app asks for one: the body of `POST /calls/{id}/transfer`, and the same object under
 * `transfer` in a relay app's `end` `handoffData` (`{"transfer": {"to": "+15551234567"}}`). snake_case,
 * like the rest of the control API. Whom it reaches is checked again by the call-control port (an E.164
 * number or a SIP URI, nothing else); here only its shape and bounds.
 */
import { z } from 'zod';
import { jsonDepthExceeds } from '../http/json-depth.js';

/** The largest transfer body read: the fields below at their longest, with room to spare. */
export const TRANSFER_MAX_BODY_BYTES = 16 * 1024;

const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);

export const transferRequest = z
  .strictObject({
    /** An E.164 number (`+15551234567`) or a SIP URI (`sip:agent@pbx.example.com`). */
    to: z.string().trim().min(1).max(256),
    /** `cold` (default): straight to the target. `warm`: the caller waits while the target hears `summary` first. */
    mode: z.enum(['cold', 'warm']).default('cold'),
    /** The caller id the target sees (E.164); a warm transfer on Twilio needs one (it places a call). */
    caller_id: z.string().trim().min(1).max(64).optional(),
    /** How long the target may ring (s); the gateway's own range applies. Default 30. */
    timeout_seconds: z.number().int().min(5).max(600).optional(),
    /** Warm: what the target hears before being put through, said by the gateway's text-to-speech. */
    summary: z.string().trim().min(1).max(4000).optional(),
    /** Warm: an audio file (WAV or MP3) played to the target instead of `summary`. */
    summary_audio_url: httpUrl.optional(),
    /** Warm: what the caller hears while waiting, where the gateway can play it. */
    hold_music_url: httpUrl.optional(),
  })
  .superRefine((t, ctx) => {
    if (t.summary !== undefined && t.summary_audio_url !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['summary_audio_url'],
        message: 'give summary or summary_audio_url, not both',
      });
    if (t.mode === 'cold')
      for (const key of ['summary', 'summary_audio_url', 'hold_music_url'] as const)
        if (t[key] !== undefined)
          ctx.addIssue({ code: 'custom', path: [key], message: `${key} is for a warm transfer` });
  });

export type TransferRequest = z.output<typeof transferRequest>;

/** What a relay app's `handoffData` says about a transfer. */
export type HandoffTransfer =
  /** Not a transfer: the call hangs up with the data, as before. */
  | { readonly kind: 'none' }
  | { readonly kind: 'transfer'; readonly request: TransferRequest }
  /** It names a transfer that cannot be read: the flow takes it as a failed transfer. */
  | { readonly kind: 'invalid'; readonly message: string };

/**
 * Reads `handoffData` (a string in ConversationRelay; the relay keeps an object as its JSON): a JSON
 * object with a `transfer` key names a transfer; anything else is data for whoever follows the call.
 */
export function readHandoffTransfer(handoffData: string | undefined): HandoffTransfer {
  if (handoffData === undefined || !handoffData.trimStart().startsWith('{')) return { kind: 'none' };
  if (jsonDepthExceeds(handoffData)) return { kind: 'none' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(handoffData);
  } catch {
    return { kind: 'none' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { kind: 'none' };
  if (!Object.hasOwn(parsed, 'transfer')) return { kind: 'none' };
  const read = transferRequest.safeParse((parsed as Record<string, unknown>)['transfer']);
  if (read.success) return { kind: 'transfer', request: read.data };
  const issue = read.error.issues[0]!;
  const where = ['transfer', ...issue.path.map(String)].join('.');
  return { kind: 'invalid', message: `handoffData ${where}: ${issue.message}` };
}
