/**
 * A fake jambonz `listen` verb (FreeSWITCH mod_audio_fork underneath), written from jambonz's listen
 * docs and mod_audio_fork: it connects with the WebSocket subprotocol `audio.jambonz.org` (a server
 * that does not accept it fails the handshake: a socket-error violation), sends one
 * JSON text message with the call's attributes (`callSid`, `from`, `to`, `direction`, …), `sampleRate`
 * and `mixType`, the verb's `metadata` merged in at the top level, then the caller's audio as binary L16
 * (little-endian, 20 ms frames) at `sampleRate`; keys (with `passDtmf`) as `{"event":"dtmf","dtmf":"5",
 * "duration":…}` in 8 kHz samples. No stop message: the socket closes. With `bidirectionalAudio:
 * {enabled: true, streaming: true}` it plays binary L16 sent back at `bidirectionalAudio.sampleRate`
 * (whole samples), and takes JSON commands by `type`: `killAudio` empties the buffer; `mark` (`data:
 * {name}`, at most 30 outstanding) comes back as `{type:'mark', data:{name, event:'playout'}}` when
 * the audio before it has played, or with `event:'cleared'` when a killAudio dropped it.
 */
import { randomUUID } from 'node:crypto';
import { FakeGateway, asObject, type FakeGatewayOptions } from './fake-gateway.js';
import { FRAME_MS } from '../../../src/audio/framer.js';

export const JAMBONZ_SUBPROTOCOL = 'audio.jambonz.org';

export interface JambonzOptions extends FakeGatewayOptions {
  callSid?: string;
  /** The listen verb's `sampleRate`: the caller's audio. */
  sampleRate?: 8000 | 16000 | 24000;
  /** `bidirectionalAudio.sampleRate`: what it plays; default `sampleRate`. */
  playbackRate?: 8000 | 16000 | 24000;
  /** The listen verb's `metadata`, merged into the first message. */
  metadata?: Record<string, unknown>;
}

const MAX_OUTSTANDING_MARKS = 30;
/** mod_audio_fork reports a key's duration in 8 kHz samples. */
const DTMF_SAMPLES = 1280;
/** Commands mod_audio_fork takes besides `killAudio` and `mark`; the fake does not act on them. */
const OTHER_COMMANDS = new Set(['playAudio', 'transcription', 'transfer', 'disconnect', 'error', 'json']);

export class FakeJambonz extends FakeGateway {
  readonly callId: string;
  readonly streamId: string;
  private readonly sampleRate: number;
  private readonly metadata: Record<string, unknown>;
  private outstandingMarks = 0;

  constructor(url: string, options: JambonzOptions = {}) {
    const sampleRate = options.sampleRate ?? 8000;
    const inBytesPerMs = (sampleRate * 2) / 1000;
    const l16 = {
      inboundBytesPerMs: inBytesPerMs,
      inboundChunkBytes: inBytesPerMs * FRAME_MS,
      inboundSilence: 0,
    };
    const outboundBytesPerMs = ((options.playbackRate ?? sampleRate) * 2) / 1000;
    super(url, { ...l16, outboundBytesPerMs, protocols: [JAMBONZ_SUBPROTOCOL] }, options);
    this.sampleRate = sampleRate;
    this.callId = options.callSid ?? randomUUID();
    this.streamId = this.callId;
    this.metadata = options.metadata ?? {};
  }

  dtmf(digit: string): void {
    this.send({ event: 'dtmf', dtmf: digit, duration: DTMF_SAMPLES });
  }

  protected sendStart(): void {
    this.send({
      sampleRate: this.sampleRate,
      mixType: 'mono',
      callSid: this.callId,
      direction: 'inbound',
      from: '+15083084809',
      to: '+15083728299',
      callId: `${randomUUID()}@192.168.1.10`,
      sipStatus: 200,
      callStatus: 'in-progress',
      accountSid: 'fef61e75-cec3-496c-a7bc-8368e4ab8b52',
      applicationSid: '0e0681b6-2b4a-4b55-9a17-d8c1c5b9d1b0',
      ...this.metadata,
    });
  }

  protected sendMedia(payload: Uint8Array): void {
    this.sendRaw(payload);
  }

  protected returnMark(name: string, cleared: boolean): boolean {
    this.outstandingMarks--;
    this.send({ type: 'mark', data: { name, event: cleared ? 'cleared' : 'playout' } });
    return true;
  }

  protected override onBinary(data: Uint8Array, at: number): void {
    if (data.length === 0 || data.length % 2 !== 0) this.violation(`binary of ${data.length} bytes`);
    this.gotMedia(data, at);
  }

  protected onText(text: string, at: number): void {
    const msg = this.json(text);
    if (!msg) return;
    const type = msg['type'];
    if (type === 'killAudio') this.gotClear(at);
    else if (type === 'mark') {
      if (++this.outstandingMarks > MAX_OUTSTANDING_MARKS) this.violation('more than 30 marks outstanding');
      this.gotNamedMark(asObject(msg['data'])?.['name'], at);
    } else if (typeof type === 'string' && OTHER_COMMANDS.has(type))
      this.received.push({ at, event: 'control', name: type });
    else this.violation(`unknown type ${String(type)}`);
  }
}
