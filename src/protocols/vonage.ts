/**
 * Vonage Voice API `connect` to a `websocket` endpoint. Audio is binary L16, 16-bit signed
 * little-endian mono at 8 or 16 kHz, both ways; JSON text messages carry events and commands.
 *
 * The first text message, `{"event":"websocket:connected","content-type":"audio/l16;rate=16000", …}`,
 * is the start: the NCCO's `headers` (≤ 512 B) are folded into it as top-level keys, and they are the
 * call's parameters. Audio sent back must be exactly 20 ms per message (320 B at 8 kHz, 640 B at 16 kHz)
 * in the same format; Vonage buffers what comes faster than real time. `{"action":"clear"}` drops the
 * buffer (answered by `websocket:cleared`); `{"action":"notify","payload":{…}}` comes back as
 * `websocket:notify` with the same payload once the audio before it has played: our marks. Keys come in
 * as `websocket:dtmf` with `digit` and `duration` (ms). There is no stop message (the socket closes) and
 * no hang-up message (that is the REST API): the server closes the socket.
 *
 * Unclear, so chosen here: the connected message carries no call id of its own. The call id is taken
 * from a header named `uuid`, `call_uuid` or `conversation_uuid` when the NCCO sets one (it should: the
 * answer webhook has the call's uuid); without one a random UUID stands in, so the call still has a
 * unique id. The notes mark clear and notify as unconfirmed for Voice; both are in Vonage's WebSocket
 * reference as rendered in its AsyncAPI description, and pipecat's Vonage serializer handles their events.
 *
 * Source: developer.vonage.com/en/voice/voice-api/concepts/websockets (and its AsyncAPI rendering at
 * asyncapi.apis.io/asyncapis/vonage/vonage-asyncapi), pipecat src/pipecat/serializers/vonage.py.
 */
import { randomUUID } from 'node:crypto';
import {
  decodeUtf8,
  dtmfDigit,
  numberAt,
  objectAt,
  parseJsonObject,
  quote,
  requireString,
  stringAt,
  type JsonObject,
} from './common.js';
import { framingFor, parseContentType } from './formats.js';
import { flattenParameters } from './parameters.js';
import { ProtocolError, type GatewayProtocol, type InboundEvent, type StreamInfo } from './types.js';

/** Header names an NCCO may use to pass the call's uuid, first found wins. */
const CALL_ID_HEADERS = ['uuid', 'call_uuid', 'conversation_uuid'];

function parseConnected(message: JsonObject): InboundEvent {
  const contentType = stringAt(message, 'content-type');
  if (!contentType)
    throw new ProtocolError('invalid_start', 'vonage websocket:connected without content-type');
  const format = parseContentType('vonage', contentType, 8000);
  if (format.encoding !== 's16le' || format.channels !== 1)
    throw new ProtocolError('invalid_start', `vonage content-type ${quote(contentType)} is not mono L16`);
  const parameters = flattenParameters(message, ['event', 'content-type']);
  const callId = CALL_ID_HEADERS.map((h) => parameters[h]).find((id) => id) ?? randomUUID();
  const stream: StreamInfo = {
    callId,
    streamId: callId,
    inbound: format,
    outbound: format,
    framing: framingFor(format, { minMs: 20, exact: true }),
    parameters,
  };
  return { type: 'start', stream };
}

function parseNotify(message: JsonObject): InboundEvent {
  // Our marks carry `payload: {name}`; a notify someone else sent is well-formed but not ours.
  const name = stringAt(objectAt(message, 'payload') ?? {}, 'name');
  return name === undefined
    ? { type: 'ignored', what: 'websocket:notify without a name' }
    : { type: 'mark', name };
}

function parse(data: Uint8Array, isBinary: boolean): InboundEvent {
  if (isBinary) return { type: 'media', payload: data };
  const message = parseJsonObject(decodeUtf8(data));
  const event = requireString(message, 'event');
  switch (event) {
    case 'websocket:connected':
      return parseConnected(message);
    case 'websocket:dtmf': {
      const digit = dtmfDigit(message['digit']);
      const durationMs = numberAt(message, 'duration');
      return durationMs === undefined ? { type: 'dtmf', digit } : { type: 'dtmf', digit, durationMs };
    }
    case 'websocket:notify':
      return parseNotify(message);
    case 'websocket:cleared':
      return { type: 'cleared' };
    default:
      throw new ProtocolError('unknown_event', `vonage event ${quote(event)}`);
  }
}

export const vonage: GatewayProtocol = {
  name: 'vonage',
  playoutAcks: true,
  canHangUp: false,
  parse,
  encodeMedia: (payload) => payload,
  encodeClear: () => JSON.stringify({ action: 'clear' }),
  encodeMark: (name) => JSON.stringify({ action: 'notify', payload: { name } }),
  encodeHangup: () => undefined,
};
