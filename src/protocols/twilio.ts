/**
 * Twilio `<Connect><Stream>` (bidirectional Media Streams). Every message is JSON text; binary frames
 * are not part of the protocol. Audio is mu-law 8 kHz mono, base64, no header, both ways.
 *
 * Twilio sends `connected`, then `start` (`start.streamSid`, `start.callSid`, `start.mediaFormat`,
 * `start.customParameters` from the TwiML `<Parameter>`s), `media` (numbers as strings; `timestamp` is
 * ms since the stream began), `dtmf` (`dtmf.digit`), `mark` echoes and `stop`. It accepts only `media`,
 * `mark` and `clear`, each with the stream's `streamSid`. A mark comes back when the audio before it has
 * played, at once when nothing is queued, and every pending mark comes back on `clear`: the echo does
 * not say which, so `outcome` is left to the sink. There is no hang-up message (that is the REST API):
 * the server closes the socket, which ends `<Connect>`.
 *
 * Source: twilio.com/docs/voice/media-streams/websocket-messages and twilio.com/docs/voice/twiml/stream.
 */
import { MULAW_8K } from '../audio/framer.js';
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
import { describedFormat, formatNumberAt } from './formats.js';
import { flattenParameters } from './parameters.js';
import {
  ProtocolError,
  type Framing,
  type GatewayProtocol,
  type InboundEvent,
  type StreamInfo,
} from './types.js';

/**
 * Whole 160-byte (20 ms) mu-law frames. Twilio takes any size and buffers it; 16 000 B (2 s) per
 * message is our ceiling, far above what the pacer sends (20–100 ms).
 */
const FRAMING: Framing = { minBytes: 160, multipleOfBytes: 160, maxBytes: 16_000, exact: false };

function parseStart(message: JsonObject): InboundEvent {
  const start = requireObject(message, 'start');
  const streamSid = stringAt(start, 'streamSid') ?? stringAt(message, 'streamSid');
  if (!streamSid) throw new ProtocolError('invalid_start', 'twilio start without a streamSid');
  const media = objectAt(start, 'mediaFormat');
  // Twilio streams mu-law 8 kHz only; a start that says otherwise is refused by describedFormat.
  const inbound = media
    ? describedFormat(
        'twilio',
        stringAt(media, 'encoding') ?? 'audio/x-mulaw',
        formatNumberAt('twilio', media, 'sampleRate') ?? 8000,
        formatNumberAt('twilio', media, 'channels') ?? 1,
      )
    : MULAW_8K;
  const stream: StreamInfo = {
    callId: stringAt(start, 'callSid') || streamSid,
    accountSid: (stringAt(start, 'accountSid') ?? '').slice(0, 64),
    streamId: streamSid,
    inbound,
    outbound: MULAW_8K,
    framing: FRAMING,
    parameters: flattenParameters(objectAt(start, 'customParameters')),
  };
  return { type: 'start', stream };
}

function parse(data: Uint8Array, isBinary: boolean): InboundEvent {
  const message = jsonMessage(data, isBinary, 'twilio');
  const event = requireString(message, 'event');
  switch (event) {
    case 'connected':
      return { type: 'connected' };
    case 'start':
      return parseStart(message);
    case 'media':
      return jsonMedia(message, true, ['streamSid']);
    case 'dtmf':
      return { type: 'dtmf', digit: dtmfDigit(requireObject(message, 'dtmf')['digit']) };
    case 'mark':
      return { type: 'mark', name: requireString(requireObject(message, 'mark'), 'name') };
    case 'stop':
      return { type: 'stop' };
    default:
      throw new ProtocolError('unknown_event', `twilio event ${quote(event)}`);
  }
}

export const twilio: GatewayProtocol = {
  name: 'twilio',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload, stream) =>
    JSON.stringify({ event: 'media', streamSid: stream.streamId, media: { payload: encodeBase64(payload) } }),
  encodeClear: (stream) => JSON.stringify({ event: 'clear', streamSid: stream.streamId }),
  encodeMark: (name, stream) => JSON.stringify({ event: 'mark', streamSid: stream.streamId, mark: { name } }),
  encodeHangup: () => undefined,
};
