/**
 * What a deployment chooses for a gateway's port besides its credentials: where the REST API is (the
 * vendor's by default; a fake in tests, a private endpoint or region in production), the bounds on
 * each request, the document host for gateways that fetch their instructions, and the few settings a
 * gateway needs that its credentials do not say (a Telnyx codec, Asterisk's dialplan, Exotel's flow).
 */
import type { Logger } from 'pino';
import type { DocumentHost } from './documents.js';
import {
  DEFAULT_MAX_ANSWER_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  RestClient,
  type RestClientOptions,
} from './rest.js';

export interface TelnyxSettings {
  /**
   * `stream_bidirectional_codec` of an outbound call's stream: what Telnyx plays of what voxbridge
   * sends, so it must match the calls' configured outbound format. Default PCMU.
   */
  readonly streamCodec?: 'PCMU' | 'PCMA' | 'G722' | 'L16';
}

export interface PlivoSettings {
  /** `<Stream contentType>` of an outbound call. Default `audio/x-mulaw;rate=8000`. */
  readonly streamContentType?: string;
}

export interface VonageSettings {
  /** The websocket endpoint's `content-type` of an outbound call. Default `audio/l16;rate=16000`. */
  readonly streamContentType?: string;
}

export interface JambonzSettings {
  /** The `listen` verb's `sampleRate` of an outbound call (8000, 16000 …). Default 8000. */
  readonly streamSampleRate?: number;
  /**
   * jambonz's createCall requires speech settings when no application is named (and naming one would
   * replace the call's own instructions with the application's); `listen` uses none of them. Defaults:
   * google, en-US, en-US-Standard-C, google, en-US.
   */
  readonly speech?: {
    readonly synthesisVendor?: string;
    readonly synthesisLanguage?: string;
    readonly synthesisVoice?: string;
    readonly recognizerVendor?: string;
    readonly recognizerLanguage?: string;
  };
}

export interface AsteriskSettings {
  /**
   * Dial strings for a target, `{number}` (E.164, with its +) and `{uri}` replaced: e.g.
   * `PJSIP/{number}@my-trunk` and `PJSIP/my-trunk/{uri}`. Needed to originate (and for a cold transfer
   * with `transferContext`); without one, that kind of target is `not_configured`.
   */
  readonly dialTemplates?: { readonly number?: string; readonly sip?: string };
  /**
   * Cold transfer by `redirect` (the default): ARI asks the caller's channel driver to transfer the call
   * (PJSIP: a REFER, or a 302 before answer) to `redirectTemplate` with `{target}` replaced by the
   * number or URI (default `PJSIP/{target}`). The channel must be in a Stasis application.
   */
  readonly redirectTemplate?: string;
  /**
   * Cold transfer by `continue` instead: the caller's channel continues in the dialplan at this context,
   * the number as its extension, priority 1; the dialplan dials it. Numbers only.
   */
  readonly transferContext?: string;
  /**
   * Where an originated channel goes once answered: a dialplan context (extension
   * `originateExtension`, default `s`, priority 1) that connects it to voxbridge through chan_websocket,
   * reading `VOXBRIDGE_STREAM_URL` and `VOXBRIDGE_STREAM_PARAMS` (see docs/gateways.md). Needed to originate.
   */
  readonly originateContext?: string;
  readonly originateExtension?: string;
}

export interface ExotelSettings {
  /**
   * The id of the flow (App Bazaar → My Apps) an outbound call is connected to once answered: a flow
   * whose Voicebot applet streams to voxbridge. Needed to originate.
   */
  readonly flowAppId?: string;
}

export interface CallControlSettings {
  /** The REST API's base URL. Default: the vendor's (see each gateway's module). */
  readonly apiBaseUrl?: string;
  /** Deadline of each request, connecting to the last byte of the answer. Default 10 s. */
  readonly requestTimeoutMs?: number;
  /** Largest answer body read. Default 256 KiB. */
  readonly maxAnswerBytes?: number;
  /** Requests at debug (method, path, status, time) and their fields at trace, secrets scrubbed. */
  readonly logger?: Logger;
  /**
   * Other values to scrub from messages and logs besides the credentials: the app's own secrets that
   * end up in a request (the media-stream token in the path of a stream URL).
   */
  readonly secrets?: readonly string[];
  /** Serves the documents Plivo, jambonz and Vonage fetch (see documents.ts). */
  readonly documents?: DocumentHost;
  readonly telnyx?: TelnyxSettings;
  readonly plivo?: PlivoSettings;
  readonly vonage?: VonageSettings;
  readonly jambonz?: JambonzSettings;
  readonly asterisk?: AsteriskSettings;
  readonly exotel?: ExotelSettings;
}

/** A gateway's REST client from the settings and what the gateway module fixes. */
export function restClientFor(
  settings: CallControlSettings,
  fixed: Omit<RestClientOptions, 'baseUrl' | 'timeoutMs' | 'maxAnswerBytes' | 'logger'> & {
    readonly defaultBaseUrl: string;
  },
): RestClient {
  const positive = (value: number | undefined, name: string, fallback: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isFinite(value) || value <= 0)
      throw new TypeError(`${fixed.gateway} call control: ${name} must be a positive number`);
    return value;
  };
  const { defaultBaseUrl, ...rest } = fixed;
  return new RestClient({
    ...rest,
    secrets: [...fixed.secrets, ...(settings.secrets ?? [])],
    baseUrl: settings.apiBaseUrl ?? defaultBaseUrl,
    timeoutMs: positive(settings.requestTimeoutMs, 'requestTimeoutMs', DEFAULT_REQUEST_TIMEOUT_MS),
    maxAnswerBytes: Math.floor(positive(settings.maxAnswerBytes, 'maxAnswerBytes', DEFAULT_MAX_ANSWER_BYTES)),
    logger: settings.logger,
  });
}
