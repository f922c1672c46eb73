/**
 * A gateway's own answering-machine verdict, as it posts it to the callback voxbridge gave it
 * (`machine_detection` in `POST /calls` without a `callback_url`): each gateway has its reader, which
 * checks the request came from the gateway and reads the verdict from its fields. Twilio's alone for
 * now (`AsyncAmdStatusCallback`: a form-encoded POST signed with `X-Twilio-Signature`); Telnyx's,
 * Plivo's, Vonage's and jambonz's verdicts come as webhooks of their own formats and have no reader
 * yet, so their `machine_detection` still needs the app's `callback_url`.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { twilioSignature } from '../../src/protocols/twilio-signature.js';
import type { GatewayName } from '../../src/protocols/types.js';

/** Who answered, as the gateway said. */
export interface GatewayAmdVerdict {
  readonly result: 'human' | 'machine' | 'unknown';
  /** The gateway's own word for it (Twilio's `AnsweredBy`). */
  readonly answeredBy: string;
  /** How long the gateway listened before deciding (Twilio's `MachineDetectionDuration`), in ms. */
  readonly detectionMs?: number | undefined;
  /** The gateway's id of the call the verdict is about, where it says. */
  readonly providerCallId?: string | undefined;
}

/** A callback request as the route read it: the exact URL the gateway was given, headers, form fields. */
export interface AmdCallbackRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

export type AmdVerdictRead =
  | { readonly ok: true; readonly verdict: GatewayAmdVerdict }
  | { readonly ok: false; readonly status: 400 | 403 | 415; readonly reason: string };

/** One gateway's reader of its verdict callbacks. */
export interface AmdVerdictReader {
  readonly gateway: GatewayName;
  read(request: AmdCallbackRequest): AmdVerdictRead;
}

/** Twilio's `AnsweredBy` values and what each means here. */
const TWILIO_ANSWERED_BY: Readonly<Record<string, GatewayAmdVerdict['result']>> = {
  human: 'human',
  machine_start: 'machine',
  machine_end_beep: 'machine',
  machine_end_silence: 'machine',
  machine_end_other: 'machine',
  fax: 'machine',
  unknown: 'unknown',
};
/** Form fields at most, and each field's length at most (Twilio's callback has a handful, all short). */
const MAX_FIELDS = 64;
const MAX_FIELD_CHARS = 256;
/** A detection lasts at most Twilio's `MachineDetectionTimeout` (59 s) and a beep wait: 10 min is ample. */
const MAX_DETECTION_MS = 600_000;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function headerOf(headers: AmdCallbackRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Twilio's verdicts, signed with the account's auth token over the URL it was given and the fields. */
export function twilioAmdReader(authToken: string): AmdVerdictReader {
  return {
    gateway: 'twilio',
    read(request) {
      if (!FORM_TYPE.test(request.contentType ?? ''))
        return { ok: false, status: 415, reason: 'the body must be application/x-www-form-urlencoded' };
      const form = new URLSearchParams(request.body.toString('utf8'));
      const params: Record<string, string> = {};
      let count = 0;
      for (const [name, value] of form) {
        if (++count > MAX_FIELDS) return { ok: false, status: 400, reason: `more than ${MAX_FIELDS} fields` };
        if (name.length > MAX_FIELD_CHARS || value.length > MAX_FIELD_CHARS)
          return { ok: false, status: 400, reason: `a field over ${MAX_FIELD_CHARS} characters` };
        if (Object.hasOwn(params, name)) return { ok: false, status: 400, reason: `${name} given twice` };
        params[name] = value;
      }
      const signature = headerOf(request.headers, 'x-twilio-signature');
      if (signature === undefined || !sameSecret(signature, twilioSignature(authToken, request.url, params)))
        return { ok: false, status: 403, reason: 'invalid X-Twilio-Signature' };
      const answeredBy = params['AnsweredBy'];
      const result = answeredBy === undefined ? undefined : TWILIO_ANSWERED_BY[answeredBy];
      if (answeredBy === undefined || result === undefined)
        return { ok: false, status: 400, reason: 'AnsweredBy is missing or not one of Twilio’s values' };
      const duration = params['MachineDetectionDuration'];
      let detectionMs: number | undefined;
      if (duration !== undefined) {
        if (!/^\d{1,7}$/.test(duration) || Number(duration) > MAX_DETECTION_MS)
          return { ok: false, status: 400, reason: 'MachineDetectionDuration is not a duration in ms' };
        detectionMs = Number(duration);
      }
      const callSid = params['CallSid'];
      if (callSid !== undefined && !/^CA[0-9a-f]{32}$/i.test(callSid))
        return { ok: false, status: 400, reason: 'CallSid is not a Twilio call id' };
      return { ok: true, verdict: { result, answeredBy, detectionMs, providerCallId: callSid } };
    },
  };
}
