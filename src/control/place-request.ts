/**
 * An outbound call as an app asks for one: the body of `POST /calls`. snake_case like the rest of the
 * control API. Its parameters go to the gateway (and come back in the stream's start message), so they
 * are held to what every gateway can carry: Plivo's `extraHeaders` take letters, digits and
 * `_ . - + : / @` only, and every gateway's start message is bounded by `PARAMETER_LIMITS`.
 */
import { z } from 'zod';
import { GATEWAYS } from '../protocols/types.js';

/** The largest body read: every field at its longest, with room to spare. */
export const PLACE_MAX_BODY_BYTES = 16 * 1024;

/**
 * The parameter voxbridge puts its own id of an outbound call in: the stream's start message brings it
 * back, and the call is matched by it (Plivo's and Vonage's start messages cannot carry the id their
 * REST APIs answered with).
 */
export const OUTBOUND_CALL_PARAMETER = 'voxbridge_call_id';

/** Parameters an app may send with a call, at most (the start message keeps 32 with ours). */
export const PLACE_MAX_PARAMETERS = 16;

const parameterName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'parameter names are a letter, then letters, digits and _');
const parameterValue = z
  .string()
  .max(256)
  .regex(
    /^[A-Za-z0-9_.+:/@-]*$/,
    'parameter values are letters, digits and _ . - + : / @ (what every gateway carries)',
  );

export const placeRequest = z.strictObject({
  gateway: z.enum(GATEWAYS),
  /** An E.164 number or a SIP URI. */
  to: z.string().trim().min(1).max(256),
  /** The caller id: a number the account owns (E.164), or the gateway's own form. */
  from: z.string().trim().min(1).max(256),
  /** The flow the call runs once answered; default `calls.defaultFlow`. */
  flow: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'a flow name is letters, digits, _ and -')
    .optional(),
  parameters: z
    .record(parameterName, parameterValue)
    .refine(
      (p) => Object.keys(p).length <= PLACE_MAX_PARAMETERS,
      `at most ${PLACE_MAX_PARAMETERS} parameters`,
    )
    .refine(
      (p) => !Object.hasOwn(p, OUTBOUND_CALL_PARAMETER) && !Object.hasOwn(p, 'flow'),
      `${OUTBOUND_CALL_PARAMETER} and flow are voxbridge's own (give the flow as "flow")`,
    )
    .optional(),
  /** How long the callee may ring (s). Default `calls.control.ringSeconds`. */
  ring_seconds: z.number().int().min(5).max(600).optional(),
  /**
   * The gateway's own answering-machine detection, where it has one, while the call goes on: its verdict
   * is posted to `callback_url` (the app's) in the gateway's own format; without one, to voxbridge
   * (Twilio's only), which reports it as an `amd` event of `source: gateway`.
   */
  machine_detection: z
    .strictObject({
      mode: z.enum(['detect', 'detect-message-end']),
      callback_url: z
        .url({ protocol: /^https?$/ })
        .max(2048)
        .optional(),
      timeout_seconds: z.number().int().min(2).max(120).optional(),
    })
    .optional(),
});

export type PlaceRequest = z.output<typeof placeRequest>;
