/**
 * Exotel Voicebot applet (AgentStream, bidirectional). JSON text messages only; audio is base64 raw
 * 16-bit mono PCM, little-endian ("raw/slin"), 8 kHz by default (16 or 24 kHz with `?sample-rate=` on
 * the URL), both ways.
 *
 * Exotel sends `connected`, `start` (`stream_sid` at the top and in `start`, `start.call_sid`,
 * `start.custom_parameters`, `start.media_format: {encoding, sample_rate, bit_rate}` with numbers as
 * strings), `media` (`timestamp` in ms since the stream began), `dtmf` (`digit`, `duration` in ms),
 * `mark` echoes once the audio before the mark has played, and `stop` (`stop.reason`: "stopped" or
 * "callended"). It accepts `media`, `mark` and `clear`, each with `stream_sid`. Outbound chunks must be at
 * least 3.2 KB ("100 ms"), at most 100 KB and a multiple of 320 B, or the caller hears gaps.
 * There is no hang-up message: closing the socket ends the applet and the flow moves on.
 *
 * Unclear, so chosen here:
 * - "Minimum 3.2 KB (100 ms of data)" does not add up at 8 kHz, where 100 ms of L16 is 1600 B (3200 B
 *   is 100 ms at 16 kHz). Both are honoured, at least 3200 B and at least 100 ms: 3200 B (200 ms) at
 *   8 kHz, 3200 B at 16 kHz, 4800 B at 24 kHz; in 20 ms steps, multiples of 320 B at every rate; at most
 *   100 000 B, under both readings of "100 KB".
 * - Exotel's own samples (exotel/Agent-Stream) use `streamSid`/`callSid`; inbound both spellings are read,
 *   outbound uses the documented `stream_sid`.
 * - Without `media_format` L16 8 kHz (the applet's default) is assumed. The `encoding` value
 *   varies by product ("audio/x-raw", or a MIME type like audio/x-mulaw for the newer StartStream API).
 *
 * Source: developer.exotel.com/docs/agentstream/websocket-protocol and .../stream-voicebot-applet,
 * support.exotel.com article 3000108630 (chunk sizes), github.com/exotel/Agent-Stream.
 */
import type { WireFormat } from '../audio/framer.js';
import {
  dtmfDigit,
  encodeBase64,
  jsonMedia,
  jsonMessage,
  numberAt,
  objectAt,
  quote,
  requireObject,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { describedFormat, formatNumberAt, framingFor, framesOf } from './formats.js';
import { customParameters } from './parameters.js';
import { ProtocolError, type GatewayProtocol, type InboundEvent, type StreamInfo } from './types.js';

const L16_8K: WireFormat = { encoding: 's16le', sampleRate: 8000, channels: 1 };

/** Exotel's names for raw 16-bit PCM; anything else is looked up as a codec name. */
const RAW_PCM = new Set(['audio/x-raw', 'raw', 'slin', 'pcm', 'pcm16', 'audio/l16', 'audio/x-l16']);

function mediaFormat(media: JsonObject): WireFormat {
  const encoding = (stringAt(media, 'encoding') ?? 'audio/x-raw').toLowerCase();
  const rate = formatNumberAt('exotel', media, 'sample_rate') ?? 8000;
  if (RAW_PCM.has(encoding)) return framesOf('exotel', { ...L16_8K, sampleRate: rate });
  return describedFormat('exotel', encoding, rate);
}

/** Exotel documents snake_case; its own samples use camelCase. */
function field(o: JsonObject, snake: string, camel: string): string | undefined {
  return stringAt(o, snake) ?? stringAt(o, camel);
}

function parseStart(message: JsonObject): InboundEvent {
  const start = requireObject(message, 'start');
  const streamSid = field(start, 'stream_sid', 'streamSid') ?? field(message, 'stream_sid', 'streamSid');
  if (!streamSid) throw new ProtocolError('invalid_start', 'exotel start without a stream_sid');
  const media = objectAt(start, 'media_format');
  const format = media ? mediaFormat(media) : L16_8K;
  const stream: StreamInfo = {
    callId: field(start, 'call_sid', 'callSid') || streamSid,
    streamId: streamSid,
    inbound: format,
    // Exotel plays back in the format it streams.
    outbound: format,
    framing: framingFor(format, { minMs: 100, minBytes: 3200, maxBytes: 100_000 }),
    parameters: customParameters(start['custom_parameters'] ?? start['customParameters']),
  };
  return { type: 'start', stream };
}

function parse(data: Uint8Array, isBinary: boolean): InboundEvent {
  const message = jsonMessage(data, isBinary, 'exotel');
  const event = requireString(message, 'event');
  switch (event) {
    case 'connected':
      return { type: 'connected' };
    case 'start':
      return parseStart(message);
    case 'media':
      return jsonMedia(message, true, ['stream_sid', 'streamSid']);
    case 'dtmf': {
      const dtmf = requireObject(message, 'dtmf');
      const durationMs = numberAt(dtmf, 'duration');
      const digit = dtmfDigit(dtmf['digit']);
      return durationMs === undefined ? { type: 'dtmf', digit } : { type: 'dtmf', digit, durationMs };
    }
    case 'mark':
      return { type: 'mark', name: requireString(requireObject(message, 'mark'), 'name') };
    case 'stop': {
      const reason = stringAt(objectAt(message, 'stop') ?? {}, 'reason');
      return reason === undefined ? { type: 'stop' } : { type: 'stop', reason };
    }
    default:
      throw new ProtocolError('unknown_event', `exotel event ${quote(event)}`);
  }
}

export const exotel: GatewayProtocol = {
  name: 'exotel',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload, stream) =>
    JSON.stringify({
      event: 'media',
      stream_sid: stream.streamId,
      media: { payload: encodeBase64(payload) },
    }),
  encodeClear: (stream) => JSON.stringify({ event: 'clear', stream_sid: stream.streamId }),
  encodeMark: (name, stream) =>
    JSON.stringify({ event: 'mark', stream_sid: stream.streamId, mark: { name } }),
  encodeHangup: () => undefined,
};
