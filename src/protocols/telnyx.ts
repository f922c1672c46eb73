/**
 * Telnyx Media Streaming with `stream_bidirectional_mode: rtp`. JSON text messages only; payloads are
 * base64 RTP payloads without headers.
 *
 * Telnyx sends `connected`, `start` (top-level `stream_id`; `start.call_control_id`,
 * `start.media_format: {encoding, sample_rate, channels}` with encodings 'PCMU', 'PCMA', 'L16', … or the
 * older 'audio/x-mulaw'), `media` (`timestamp` as Twilio's), `dtmf`, `mark` echoes (same rules as
 * Twilio: at once when nothing is queued, all of them on `clear`), `error` and `stop`. It accepts
 * `{"event":"media","media":{"payload"}}` with 20 ms to 30 s of audio, `mark` and `clear`, none of them
 * carrying the stream id.
 *
 * What Telnyx plays is `stream_bidirectional_codec` (PCMU 8 kHz by default), which the start message
 * does not carry: it is the deployment's `outbound` setting. L16 is an RTP payload, big-endian by RFC
 * 3551; the docs do not say, so the byte order is the `l16ByteOrder` setting (default 'big') and
 * `encodeMedia` swaps bytes so the rest of the server deals in s16le. Inbound media messages do not say
 * their codec, so big-endian L16 inbound cannot be swapped statelessly: such a start is refused (on the
 * PSTN Telnyx streams the call's PCMU/PCMA). Custom parameters: the AsyncAPI start frame carries
 * `start.custom_parameters` as an object (`{"customer_id": "customer_123"}`); the Call Control
 * `streaming_start` command takes them as a `[{name, value}]` list ("Custom parameters to be sent as part
 * of the WebSocket connection"), and Telnyx does not say the frame cannot carry that list, so both are
 * read (and `customParameters`). Anything else there is no parameters, never a refused start.
 *
 * Source: developers.telnyx.com/docs/voice/programmable-voice/media-streaming, the AsyncAPI page
 * developers.telnyx.com/api-reference/websockets/stream-call-media-over-websocket, the TeXML
 * `<Stream>` page (bidirectionalCodec, bidirectionalSamplingRate 8000/16000/24000), and the
 * `streaming_start` page developers.telnyx.com/api-reference/call-commands/streaming-start (its
 * `custom_parameters` in the official SDKs: `Array<{name?, value?}>`).
 */
import { MULAW_8K, type WireFormat } from '../audio/framer.js';
import {
  dtmfDigit,
  encodeBase64,
  jsonMedia,
  jsonMessage,
  objectAt,
  quote,
  requireObject,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { configuredOutbound, describedFormat, formatNumberAt, framingFor } from './formats.js';
import { customParameters } from './parameters.js';
import {
  ProtocolError,
  type GatewayProtocol,
  type InboundEvent,
  type ProtocolOptions,
  type StreamInfo,
} from './types.js';

/** G.711 at 8 kHz, L16 at the rates `bidirectionalSamplingRate` offers. G.722, Opus, AMR-WB: not ours. */
function telnyxPlays(f: WireFormat): boolean {
  if (f.channels !== 1) return false;
  return f.encoding === 's16le' ? [8000, 16000, 24000].includes(f.sampleRate) : f.sampleRate === 8000;
}

/** Swaps each pair of bytes: big-endian L16 to s16le and back (a copy; an odd last byte is dropped). */
function swap16(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length & ~1);
  for (let i = 0; i < out.length; i += 2) {
    out[i] = bytes[i + 1]!;
    out[i + 1] = bytes[i]!;
  }
  return out;
}

/** Whether L16 goes out big-endian: the stream's setting, big when a StreamInfo did not say. */
function bigEndianOut(stream: StreamInfo): boolean {
  return stream.outbound.encoding === 's16le' && stream.dialect?.l16ByteOrder !== 'little';
}

function parseStart(message: JsonObject, options: ProtocolOptions | undefined): InboundEvent {
  const start = requireObject(message, 'start');
  const streamId = stringAt(message, 'stream_id') ?? stringAt(start, 'stream_id');
  if (!streamId) throw new ProtocolError('invalid_start', 'telnyx start without a stream_id');
  const media = objectAt(start, 'media_format');
  const inbound = media
    ? describedFormat(
        'telnyx',
        stringAt(media, 'encoding') ?? 'PCMU',
        formatNumberAt('telnyx', media, 'sample_rate') ?? 8000,
        formatNumberAt('telnyx', media, 'channels') ?? 1,
      )
    : MULAW_8K;
  const l16ByteOrder = options?.l16ByteOrder ?? 'big';
  // A media message does not say its codec and parse keeps no state, so inbound L16 cannot be swapped:
  // refused rather than fed to the VAD as noise. Telnyx streams the call's codec (PCMU/PCMA on the PSTN).
  if (inbound.encoding === 's16le' && l16ByteOrder === 'big')
    throw new ProtocolError(
      'invalid_start',
      'telnyx: big-endian L16 inbound is not supported; stream PCMU/PCMA',
    );
  const outbound = configuredOutbound('telnyx', options?.outbound, MULAW_8K, telnyxPlays);
  const stream: StreamInfo = {
    callId: stringAt(start, 'call_control_id') || streamId,
    streamId,
    inbound,
    outbound,
    // 20 ms to 30 s per message; we cap a message at 1 s, far above what the pacer sends.
    framing: framingFor(outbound, { minMs: 20, maxMs: 1000 }),
    parameters: customParameters(start['custom_parameters'] ?? start['customParameters']),
    dialect: { l16ByteOrder },
  };
  return { type: 'start', stream };
}

function parse(data: Uint8Array, isBinary: boolean, options?: ProtocolOptions): InboundEvent {
  const message = jsonMessage(data, isBinary, 'telnyx');
  const event = requireString(message, 'event');
  switch (event) {
    case 'connected':
      return { type: 'connected' };
    case 'start':
      return parseStart(message, options);
    case 'media':
      return jsonMedia(message, true, ['stream_id']);
    case 'dtmf':
      return { type: 'dtmf', digit: dtmfDigit(requireObject(message, 'dtmf')['digit']) };
    case 'mark':
      return { type: 'mark', name: requireString(requireObject(message, 'mark'), 'name') };
    case 'error': {
      const title = stringAt(objectAt(message, 'payload') ?? {}, 'title') ?? 'unknown';
      return { type: 'ignored', what: `error: ${title}` };
    }
    case 'stop':
      return { type: 'stop' };
    default:
      throw new ProtocolError('unknown_event', `telnyx event ${quote(event)}`);
  }
}

export const telnyx: GatewayProtocol = {
  name: 'telnyx',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload, stream) => {
    const wire = bigEndianOut(stream) ? swap16(payload) : payload;
    return JSON.stringify({ event: 'media', media: { payload: encodeBase64(wire) } });
  },
  encodeClear: () => JSON.stringify({ event: 'clear' }),
  encodeMark: (name) => JSON.stringify({ event: 'mark', mark: { name } }),
  encodeHangup: () => undefined,
};
