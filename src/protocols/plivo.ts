/**
 * Plivo `<Stream bidirectional="true">` (Audio Streaming). JSON text messages only, base64 audio.
 *
 * Plivo sends `start` (no `connected` first; `start.callId`, `start.streamId`, `start.mediaFormat:
 * {encoding, sampleRate}`, and a top-level `extra_headers` string from the `extraHeaders` attribute),
 * `media`, `dtmf`, `playedStream` (a checkpoint we sent was reached: the audio before it played) and
 * `clearedAudio` (our clear took effect). The checkpoint's answer is `playedStream` in the reference and
 * the XML docs, but `played` (same `streamId` and `name`) in Plivo's support article on checkpoints:
 * both are taken as the same acknowledgement. It accepts `playAudio` with `media: {contentType, sampleRate,
 * payload}` (audio/x-l16 at 8000/16000 or audio/x-mulaw at 8000), `checkpoint` and `clearAudio`, the last
 * two with the `streamId`. Plivo documents no size limit per `playAudio`: whole 20 ms frames, 1 s at most.
 *
 * Unclear in the docs, so chosen here:
 * - `media.timestamp` is a Unix time in ms, not ms since the stream began, so it is not passed on.
 * - The stream's `contentType` default differs between pages (mu-law vs L16 8 kHz); the start message's
 *   `mediaFormat` decides, and without one the deployment's `outbound` (else mu-law 8 kHz) is assumed.
 * - What we play is the deployment's `outbound` if set, else the inbound format.
 * - `extra_headers` appears as `k=v;k=v`, `k=v,k=v` and `"{}"`: all three are read.
 * - `stop` is not in the reference (the socket just closes), but is taken as a stop when it comes;
 *   `playFailed` and `error` (seen in Plivo's own agent-transport) are ignored.
 *
 * Source: plivo.com/docs/voice-agents/audio-streaming/concepts/audio-streaming-reference,
 * docs.plivo.com/docs/voice/xml/audiostream (and its stream-events-to-plivo pages), support.plivo.com
 * "How do I know if the buffered audio is played?" (articles/32800564168345).
 */
import { MULAW_8K, type WireFormat } from '../audio/framer.js';
import {
  dtmfDigit,
  encodeBase64,
  jsonMedia,
  jsonMessage,
  objectAt,
  parseJsonObject,
  quote,
  requireObject,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { configuredOutbound, formatNumberAt, framingFor, parseContentType } from './formats.js';
import { flattenParameters } from './parameters.js';
import {
  ProtocolError,
  type GatewayProtocol,
  type InboundEvent,
  type ProtocolOptions,
  type StreamInfo,
} from './types.js';

function plivoPlays(f: WireFormat): boolean {
  if (f.channels !== 1) return false;
  if (f.encoding === 's16le') return f.sampleRate === 8000 || f.sampleRate === 16000;
  return f.encoding === 'mulaw' && f.sampleRate === 8000;
}

/** `extra_headers`: "userId=12345;sessionId=abc", "test1=12,test2=123" or a JSON object as a string. */
function parseExtraHeaders(raw: string | undefined): Record<string, string> {
  const text = raw?.trim() ?? '';
  if (text.startsWith('{')) return flattenParameters(parseJsonObject(text));
  const entries: Array<[string, string]> = [];
  for (const pair of text.split(/[;,]/)) {
    const at = pair.indexOf('=');
    if (at > 0) entries.push([pair.slice(0, at).trim(), pair.slice(at + 1).trim()]);
  }
  return Object.fromEntries(entries);
}

function parseStart(message: JsonObject, options: ProtocolOptions | undefined): InboundEvent {
  const start = requireObject(message, 'start');
  const streamId = stringAt(start, 'streamId') ?? stringAt(message, 'streamId');
  if (!streamId) throw new ProtocolError('invalid_start', 'plivo start without a streamId');
  const media = objectAt(start, 'mediaFormat');
  const inbound = media
    ? parseContentType(
        'plivo',
        requireString(media, 'encoding'),
        formatNumberAt('plivo', media, 'sampleRate') ?? 8000,
      )
    : (options?.outbound ?? MULAW_8K);
  const outbound = configuredOutbound('plivo', options?.outbound, inbound, plivoPlays);
  const stream: StreamInfo = {
    callId: stringAt(start, 'callId') || streamId,
    streamId,
    inbound,
    outbound,
    framing: framingFor(outbound, { minMs: 20, maxMs: 1000 }),
    parameters: parseExtraHeaders(stringAt(message, 'extra_headers')),
  };
  return { type: 'start', stream };
}

function parse(data: Uint8Array, isBinary: boolean, options?: ProtocolOptions): InboundEvent {
  const message = jsonMessage(data, isBinary, 'plivo');
  const event = requireString(message, 'event');
  switch (event) {
    case 'start':
      return parseStart(message, options);
    case 'media':
      return jsonMedia(message, false, ['streamId']);
    case 'dtmf':
      return { type: 'dtmf', digit: dtmfDigit(requireObject(message, 'dtmf')['digit']) };
    case 'playedStream':
    case 'played':
      return { type: 'mark', name: requireString(message, 'name'), outcome: 'played' };
    case 'clearedAudio':
      return { type: 'cleared' };
    case 'playFailed':
    case 'error':
      return { type: 'ignored', what: `${event}: ${stringAt(message, 'reason') ?? 'no reason given'}` };
    case 'stop':
      return { type: 'stop' };
    default:
      throw new ProtocolError('unknown_event', `plivo event ${quote(event)}`);
  }
}

export const plivo: GatewayProtocol = {
  name: 'plivo',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload, stream) =>
    JSON.stringify({
      event: 'playAudio',
      media: {
        contentType: stream.outbound.encoding === 's16le' ? 'audio/x-l16' : 'audio/x-mulaw',
        sampleRate: stream.outbound.sampleRate,
        payload: encodeBase64(payload),
      },
    }),
  encodeClear: (stream) => JSON.stringify({ event: 'clearAudio', streamId: stream.streamId }),
  encodeMark: (name, stream) => JSON.stringify({ event: 'checkpoint', streamId: stream.streamId, name }),
  encodeHangup: () => undefined,
};
