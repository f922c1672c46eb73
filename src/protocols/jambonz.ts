/**
 * jambonz `listen` (FreeSWITCH mod_audio_fork underneath), WebSocket subprotocol `audio.jambonz.org`.
 * Binary messages are L16 audio, 16-bit signed little-endian, both ways; text messages are JSON.
 *
 * The first text message is the start: the call's attributes as jambonz sends them on webhooks
 * (`callSid`, `from`, `to`, `direction`, …) plus `sampleRate` and `mixType`, with the verb's `metadata`
 * merged in at the top level; all of it becomes the call's parameters. Audio comes at `sampleRate`,
 * two channels when `mixType` is "stereo". Audio we send (with `bidirectionalAudio.streaming: true`) is
 * played at `bidirectionalAudio.sampleRate`, which the start message does not carry: the deployment's
 * `outbound` setting, else the inbound rate. `{"type":"killAudio"}` drops what is buffered;
 * `{"type":"mark","data":{"name"}}` (at most 30 outstanding) comes back as `{"type":"mark","data":{"name",
 * "event":"playout"|"cleared"}}`, so jambonz says which. With `passDtmf`, keys arrive as
 * `{"event":"dtmf","dtmf":"5","duration":…}`. There is no stop message (the socket closes).
 *
 * Unclear, so chosen here:
 * - `duration` of a key is FreeSWITCH's, in 8 kHz samples (the feature server converts it that way);
 *   it is passed on as ms (÷ 8).
 * - `{"type":"disconnect"}` ends the listen verb but leaves the call to the application, just as closing
 *   the socket does: so no hang-up message (`canHangUp: false`); the server closes the socket.
 * - Mark names are spliced into mod_audio_fork's JSON unescaped: keep them to plain characters.
 * - No documented size limit per message (mod_audio_fork buffers up to 650 KB): whole 20 ms frames, 1 s
 *   at most.
 *
 * Source: docs.jambonz.org/verbs/verbs/listen and docs.jambonz.org/docs/webhooks/listen,
 * jambonz/jambonz-feature-server lib/tasks/listen.js, jambonz/freeswitch-modules mod_audio_fork
 * (README.md, lws_glue.cpp), pipecat's jambonz serializer docs (little-endian mono PCM).
 */
import {
  decodeUtf8,
  dtmfDigit,
  numberAt,
  parseJsonObject,
  quote,
  requireObject,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { configuredOutbound, formatNumberAt, framingFor, framesOf } from './formats.js';
import { flattenParameters } from './parameters.js';
import {
  ProtocolError,
  type GatewayProtocol,
  type InboundEvent,
  type ProtocolOptions,
  type StreamInfo,
} from './types.js';

/** DTMF durations from FreeSWITCH count 8 kHz samples. */
const DTMF_SAMPLES_PER_MS = 8;

/** The metadata message: the only one with the call's attributes (callSid, sampleRate, mixType). */
function isMetadata(message: JsonObject): boolean {
  return 'callSid' in message || 'sampleRate' in message || 'mixType' in message;
}

function parseStart(message: JsonObject, options: ProtocolOptions | undefined): InboundEvent {
  const callSid = stringAt(message, 'callSid');
  if (!callSid) throw new ProtocolError('invalid_start', 'jambonz metadata without a callSid');
  const sampleRate = formatNumberAt('jambonz', message, 'sampleRate') ?? 8000;
  const channels = stringAt(message, 'mixType') === 'stereo' ? 2 : 1;
  const inbound = framesOf('jambonz', { encoding: 's16le', sampleRate, channels });
  const outbound = configuredOutbound(
    'jambonz',
    options?.outbound,
    { encoding: 's16le', sampleRate, channels: 1 },
    (f) => f.encoding === 's16le' && f.channels === 1,
  );
  const stream: StreamInfo = {
    callId: callSid,
    streamId: callSid,
    inbound,
    outbound,
    framing: framingFor(outbound, { minMs: 20, maxMs: 1000 }),
    parameters: flattenParameters(message),
  };
  return { type: 'start', stream };
}

function parseTyped(type: string, message: JsonObject): InboundEvent {
  if (type !== 'mark') return { type: 'ignored', what: type };
  const data = requireObject(message, 'data');
  const name = requireString(data, 'name');
  const event = stringAt(data, 'event');
  if (event === 'playout') return { type: 'mark', name, outcome: 'played' };
  if (event === 'cleared') return { type: 'mark', name, outcome: 'cleared' };
  return { type: 'mark', name };
}

function parse(data: Uint8Array, isBinary: boolean, options?: ProtocolOptions): InboundEvent {
  if (isBinary) return { type: 'media', payload: data };
  const message = parseJsonObject(decodeUtf8(data));
  if (isMetadata(message)) return parseStart(message, options);
  const type = stringAt(message, 'type');
  // Messages jambonz sends by `type`: mark echoes, and playDone after a playAudio it played from a file.
  if (type === 'mark' || type === 'playDone') return parseTyped(type, message);
  const event = stringAt(message, 'event');
  if (event === 'dtmf') {
    const digit = dtmfDigit(message['dtmf']);
    const samples = numberAt(message, 'duration');
    return samples === undefined
      ? { type: 'dtmf', digit }
      : { type: 'dtmf', digit, durationMs: Math.round(samples / DTMF_SAMPLES_PER_MS) };
  }
  if (type === undefined && event === undefined)
    throw new ProtocolError('malformed', 'jambonz message without type');
  throw new ProtocolError('unknown_event', `jambonz message ${quote(type ?? event)}`);
}

export const jambonz: GatewayProtocol = {
  name: 'jambonz',
  subprotocol: 'audio.jambonz.org',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload) => payload,
  encodeClear: () => JSON.stringify({ type: 'killAudio' }),
  encodeMark: (name) => JSON.stringify({ type: 'mark', data: { name } }),
  encodeHangup: () => undefined,
};
