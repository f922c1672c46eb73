/**
 * What every phone gateway's wire protocol is translated to and from. Each gateway has one pure module
 * (no sockets, no timers, no state across messages): `parse()` turns one inbound WebSocket message into
 * one typed event, and the `encode…()` functions build outbound messages. The socket loop lives in
 * the media-stream server; the protocol modules are tested against fixtures from the vendors' docs.
 */
import type { WireFormat } from '../audio/framer.js';

/** Every gateway with a protocol module: the config's `calls.gateways` and `PROTOCOLS` are keyed by these. */
export const GATEWAYS = ['twilio', 'telnyx', 'plivo', 'vonage', 'exotel', 'asterisk', 'jambonz'] as const;

export type GatewayName = (typeof GATEWAYS)[number];

/**
 * The gateways whose outbound codec is a deployment setting (`calls.formats`, `ProtocolOptions.outbound`).
 * The others play what their start message says (Vonage's content-type, Asterisk's format) or one fixed
 * codec (Twilio, Exotel), so the config refuses a setting for them rather than silently ignoring it.
 */
export const CONFIGURABLE_OUTBOUND = ['telnyx', 'plivo', 'jambonz'] as const satisfies readonly GatewayName[];

/**
 * How outbound audio must be cut into messages. A message carries `multipleOfBytes × k` bytes, at least
 * `minBytes` and at most `maxBytes`; with `exact` every message is exactly `minBytes` (Vonage: 20 ms).
 * The sink accumulates 20 ms frames until a message is complete and pads the last one with silence.
 */
export interface Framing {
  readonly minBytes: number;
  readonly multipleOfBytes: number;
  readonly maxBytes: number;
  readonly exact: boolean;
}

/**
 * Wire details a gateway's encoders need that the formats do not say, fixed when the stream starts (by
 * the start message or a setting). Only the module of the gateway that set them reads them.
 */
export interface WireDialect {
  /** Asterisk: control messages are plain text or JSON (chosen per call, `f(json)`); commands must match. */
  readonly control?: 'text' | 'json';
  /** Telnyx: the byte order of L16 on the wire; `inbound`/`outbound` stay s16le and the module swaps. */
  readonly l16ByteOrder?: 'big' | 'little';
}

/** The stream a gateway opened: from its start message, needed by every encoder. */
export interface StreamInfo {
  /** The gateway's call id when it gives one (Twilio `callSid`), else its stream id. */
  readonly callId: string;
  /** The id outbound messages must carry (Twilio `streamSid`, Exotel `stream_sid`, Plivo `streamId`). */
  readonly streamId: string;
  /** The caller's audio as it arrives. */
  readonly inbound: WireFormat;
  /** What the gateway plays: the sink's wire format. */
  readonly outbound: WireFormat;
  readonly framing: Framing;
  /** The account the call belongs to, where the gateway says (Twilio `accountSid`). */
  readonly accountSid?: string;
  /** Custom parameters of the call (Twilio `customParameters`, …); `flow` picks the IVR flow. */
  readonly parameters: Readonly<Record<string, string>>;
  readonly dialect?: WireDialect;
}

/** One inbound message, as a union on `type`. Payloads are views into the message, in the inbound codec. */
export type InboundEvent =
  /** The socket is up, the stream not yet described (Twilio/Telnyx `connected`). */
  | { readonly type: 'connected' }
  | { readonly type: 'start'; readonly stream: StreamInfo }
  | {
      readonly type: 'media';
      /** Raw audio in `stream.inbound`'s encoding (mu-law bytes, or s16le for L16). */
      readonly payload: Uint8Array;
      /** Gateway timestamp of the chunk (ms since the stream began) when it gives one. */
      readonly timestampMs?: number;
      /** The stream it says it belongs to, where the message names one: checked against the call's. */
      readonly streamId?: string;
    }
  /**
   * A playout acknowledgement for a mark we sent. `outcome` when the gateway says which (jambonz
   * `playout`/`cleared`, Plivo `playedStream` or `played` = played); Twilio-style echoes say nothing
   * (`undefined`): the sink decides from whether a clear was sent after the mark.
   */
  | { readonly type: 'mark'; readonly name: string; readonly outcome?: 'played' | 'cleared' }
  /** The gateway confirms a clear (Plivo `clearedAudio`). */
  | { readonly type: 'cleared' }
  | { readonly type: 'dtmf'; readonly digit: string; readonly durationMs?: number }
  /** Asterisk's `MEDIA_XOFF` (pause: its queue is nearly full) and `MEDIA_XON` (resume). */
  | { readonly type: 'flow'; readonly paused: boolean }
  | { readonly type: 'stop'; readonly reason?: string }
  /** A well-formed message the call does not act on (keepalives, `media_buffering_completed`, …). */
  | { readonly type: 'ignored'; readonly what: string };

/** One outbound WebSocket message: text (JSON or a control line) or binary. */
export type OutboundMessage = string | Uint8Array;

export type ProtocolErrorCode =
  /** Not parseable: bad JSON, a bad control line, bad base64. */
  | 'malformed'
  /** Parseable, but the event name is not one this gateway sends. */
  | 'unknown_event'
  /** Binary where the gateway only sends text, or text where it only sends binary. */
  | 'unexpected_binary'
  | 'unexpected_text'
  /** A start message without what the call needs (a stream id, a codec we cannot handle). */
  | 'invalid_start';

/** Bad input from the far end: logged and dropped (or that one connection closed), never a crash. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Settings a deployment chooses where the gateway leaves a choice (the config's `calls.formats`). */
export interface ProtocolOptions {
  /**
   * The outbound format where the start message does not fix it: Telnyx plays what
   * `stream_bidirectional_codec` says, Plivo what `<Stream contentType>` says, jambonz L16 at
   * `bidirectionalAudio.sampleRate`. Each of those modules documents its default. Vonage, Asterisk,
   * Twilio and Exotel play what their start message or protocol fixes, so the config refuses a format for
   * them and their modules ignore this.
   */
  readonly outbound?: WireFormat;
  /**
   * Telnyx only: the byte order of L16 payloads. They are RTP payloads, and RTP's L16 is big-endian
   * (RFC 3551); Telnyx's docs do not say, so the default is 'big'. Every other gateway documents (or its
   * source shows) little-endian L16 and ignores this.
   */
  readonly l16ByteOrder?: 'big' | 'little';
}

export interface GatewayProtocol {
  readonly name: GatewayName;
  /** The WebSocket subprotocol the gateway asks for (jambonz `audio.jambonz.org`), if any. */
  readonly subprotocol?: string;
  /** True when the gateway acknowledges playout (marks, checkpoints); else the sink keeps a playout clock. */
  readonly playoutAcks: boolean;
  /** True when `encodeHangup` can end the call; otherwise the server closes the socket. */
  readonly canHangUp: boolean;
  /** Parses one message; throws `ProtocolError` for bad input. `data` is the message's bytes. */
  parse(data: Uint8Array, isBinary: boolean, options?: ProtocolOptions): InboundEvent;
  /** One message of outbound audio; `payload` already obeys `stream.framing`. */
  encodeMedia(payload: Uint8Array, stream: StreamInfo): OutboundMessage;
  /** Drop everything buffered at the far end. */
  encodeClear(stream: StreamInfo): OutboundMessage;
  /** A playout marker named `name` (only when `playoutAcks`). */
  encodeMark(name: string, stream: StreamInfo): OutboundMessage | undefined;
  encodeHangup(stream: StreamInfo): OutboundMessage | undefined;
}
