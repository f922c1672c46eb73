/**
 * Asterisk chan_websocket (20.16/21.11/22.6/23.0 and later). Binary messages are media in the channel's
 * codec, both ways, with no header; text messages are control, in one of two formats chosen per call:
 * plain text (`MEDIA_START connection_id:… channel:… format:ulaw optimal_frame_size:160 ptime:20`, the
 * default, deprecated) or JSON (`{"event":"MEDIA_START",…}`, with `f(json)` or chan_websocket.conf,
 * 20.18/22.8/23.2 and later). Commands must use the format the call uses, so it is kept in
 * `stream.dialect.control`.
 *
 * `MEDIA_START` is the start. Asterisk reframes and retimes what we send, in multiples of
 * `optimal_frame_size` (leftovers are dropped), at most 65 500 B per message (a bigger one closes the
 * socket and hangs up). Its queue holds about 1000 frames: `MEDIA_XOFF` at 900, `MEDIA_XON` below 800
 * (flow). `FLUSH_MEDIA` drops the queue; `MARK_MEDIA <id>` comes back as `MEDIA_MARK_PROCESSED <id>` when
 * the audio before it reaches the front of the queue (played). A flush drops queued marks without a word:
 * the sink resolves them as cleared. MARK_MEDIA exists from 20.18/22.8/23.2, where older versions ignore
 * it; the sink's mark grace period covers them. `HANGUP` hangs up and closes the socket. Keys arrive as
 * `DTMF_END`. Text commands are at most 128 bytes, so mark names must stay short.
 *
 * slin* is signed linear in Asterisk's host byte order: little-endian on the x86-64 and arm64 hosts it
 * runs on. Codecs Asterisk cannot reframe (opus, speex, g729: passthrough, optimal_frame_size 0) and
 * ones we cannot carry (g722, gsm, …) are `invalid_start`.
 *
 * Source: docs.asterisk.org Configuration/Channel-Drivers/WebSocket (asterisk/documentation
 * docs/Configuration/Channel-Drivers/WebSocket.md) and channels/chan_websocket.c (asterisk/asterisk).
 */
import { MULAW_8K, type WireFormat } from '../audio/framer.js';
import {
  decodeUtf8,
  dtmfDigit,
  objectAt,
  parseJsonObject,
  quote,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { formatNumberAt, framesOf } from './formats.js';
import { flattenParameters } from './parameters.js';
import { ProtocolError, type GatewayProtocol, type InboundEvent, type StreamInfo } from './types.js';

/** The largest message chan_websocket reads; beyond it the socket is closed and the call hung up. */
const MAX_MESSAGE_BYTES = 65_500;

/**
 * Asterisk's format names: ulaw, alaw, slin (8 kHz), slin12 … slin192 (slin44 is 44.1 kHz); which of
 * them a call may use is `CARRIED_FORMATS`' business.
 */
function formatOf(name: string): WireFormat {
  if (name === 'ulaw') return framesOf('asterisk', MULAW_8K);
  if (name === 'alaw') return framesOf('asterisk', { encoding: 'alaw', sampleRate: 8000, channels: 1 });
  const slin = /^slin(\d{0,3})$/.exec(name);
  if (slin) {
    const khz = Number(slin[1] || '8');
    return framesOf('asterisk', {
      encoding: 's16le',
      sampleRate: khz === 44 ? 44_100 : khz * 1000,
      channels: 1,
    });
  }
  throw new ProtocolError('invalid_start', `asterisk format ${quote(name)} is not supported`);
}

/** A plain-text control line: `NAME key:value …`, or `NAME <id>` for the mark and buffering events. */
function parseLine(line: string): { event: string; fields: JsonObject; rest: string } {
  const [event = '', ...words] = line.trim().split(/\s+/);
  const fields = Object.fromEntries(
    words.flatMap((word) => {
      const at = word.indexOf(':');
      return at > 0 ? [[word.slice(0, at), word.slice(at + 1)] as const] : [];
    }),
  );
  return { event, fields, rest: words.join(' ') };
}

function parseStart(fields: JsonObject, control: 'text' | 'json'): InboundEvent {
  const connectionId = stringAt(fields, 'connection_id');
  if (!connectionId) throw new ProtocolError('invalid_start', 'asterisk MEDIA_START without a connection_id');
  const format = formatOf(requireString(fields, 'format'));
  const frame = formatNumberAt('asterisk', fields, 'optimal_frame_size') ?? 0;
  if (!Number.isInteger(frame) || frame <= 0)
    throw new ProtocolError('invalid_start', 'asterisk passthrough codec (no optimal_frame_size)');
  // The sink's buffers are sized from it: no bigger than a message may be.
  if (frame > MAX_MESSAGE_BYTES)
    throw new ProtocolError(
      'invalid_start',
      `asterisk optimal_frame_size ${frame} is over ${MAX_MESSAGE_BYTES} B`,
    );
  const stream: StreamInfo = {
    callId: stringAt(fields, 'channel_id') || connectionId,
    streamId: connectionId,
    inbound: format,
    outbound: format,
    framing: {
      minBytes: frame,
      multipleOfBytes: frame,
      maxBytes: MAX_MESSAGE_BYTES - (MAX_MESSAGE_BYTES % frame),
      exact: false,
    },
    // Only the JSON MEDIA_START carries channel variables; plain text has none to give.
    parameters: flattenParameters(objectAt(fields, 'channel_variables')),
    dialect: { control },
  };
  return { type: 'start', stream };
}

function parseControl(event: string, fields: JsonObject, id: string, control: 'text' | 'json'): InboundEvent {
  switch (event) {
    case 'MEDIA_START':
      return parseStart(fields, control);
    case 'DTMF_END':
      return { type: 'dtmf', digit: dtmfDigit(fields['digit']) };
    case 'MEDIA_XOFF':
      return { type: 'flow', paused: true };
    case 'MEDIA_XON':
      return { type: 'flow', paused: false };
    case 'MEDIA_MARK_PROCESSED':
      // Our marks always carry an id; one without is someone else's.
      return id
        ? { type: 'mark', name: id, outcome: 'played' }
        : { type: 'ignored', what: `${event} without id` };
    case 'MEDIA_BUFFERING_COMPLETED':
    case 'QUEUE_DRAINED':
    case 'STATUS':
    case 'ERROR':
      return { type: 'ignored', what: event };
    default:
      throw new ProtocolError('unknown_event', `asterisk event ${quote(event)}`);
  }
}

function parse(data: Uint8Array, isBinary: boolean): InboundEvent {
  if (isBinary) return { type: 'media', payload: data };
  const text = decodeUtf8(data).trim();
  if (text.startsWith('{')) {
    const message = parseJsonObject(text);
    const id = stringAt(message, 'correlation_id') ?? '';
    return parseControl(requireString(message, 'event'), message, id, 'json');
  }
  if (!/^[A-Z_]+(\s|$)/.test(text)) throw new ProtocolError('malformed', 'not an asterisk control line');
  const { event, fields, rest } = parseLine(text);
  return parseControl(event, fields, rest, 'text');
}

/** A command in the control format the call uses. */
function command(stream: StreamInfo, name: string, correlationId?: string): string {
  if (stream.dialect?.control === 'json')
    return JSON.stringify(
      correlationId === undefined ? { command: name } : { command: name, correlation_id: correlationId },
    );
  return correlationId === undefined ? name : `${name} ${correlationId}`;
}

export const asterisk: GatewayProtocol = {
  name: 'asterisk',
  playoutAcks: true,
  canHangUp: true,
  parse,
  encodeMedia: (payload) => payload,
  encodeClear: (stream) => command(stream, 'FLUSH_MEDIA'),
  encodeMark: (name, stream) => command(stream, 'MARK_MEDIA', name),
  encodeHangup: (stream) => command(stream, 'HANGUP'),
};
