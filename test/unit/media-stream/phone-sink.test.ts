/**
 * The phone sink: gateway framing (exact 20 ms, Exotel's ≥ 100 ms multiples of 320 B, Asterisk's
 * multiples of the optimal frame size), marks and the normalised playout events, clears and epochs,
 * backpressure and flow control.
 */
import { describe, expect, it } from 'vitest';
import { PhoneSink, type PlayoutOutcome } from '../../../adapters/media-stream/phone-sink.js';
import type { Framing, GatewayProtocol, OutboundMessage, StreamInfo } from '../../../src/protocols/types.js';
import type { WireFormat } from '../../../src/audio/framer.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const MULAW_8K: WireFormat = { encoding: 'mulaw', sampleRate: 8000, channels: 1 };
const L16_8K: WireFormat = { encoding: 's16le', sampleRate: 8000, channels: 1 };

type Sent = { kind: 'media'; bytes: Uint8Array } | { kind: 'mark'; name: string } | { kind: 'clear' };

/** A gateway protocol that writes what the sink asked for as plain objects, so tests can read it back. */
function protocol(playoutAcks: boolean): GatewayProtocol {
  return {
    name: 'twilio',
    playoutAcks,
    canHangUp: false,
    parse: () => ({ type: 'ignored', what: 'test' }),
    encodeMedia: (payload) => payload.slice(),
    encodeClear: () => JSON.stringify({ kind: 'clear' }),
    encodeMark: (name) => (playoutAcks ? JSON.stringify({ kind: 'mark', name }) : undefined),
    encodeHangup: () => undefined,
  };
}

function stream(outbound: WireFormat, framing: Framing): StreamInfo {
  return { callId: 'c', streamId: 's', inbound: outbound, outbound, framing, parameters: {} };
}

function setup(options: {
  format?: WireFormat;
  framing?: Framing;
  acks?: boolean;
  /** Leave send callbacks pending (a slow socket). */
  holdCallbacks?: boolean;
  maxInFlightBytes?: number;
  burstFrames?: number;
}) {
  const format = options.format ?? MULAW_8K;
  const framing = options.framing ?? { minBytes: 160, multipleOfBytes: 160, maxBytes: 16_000, exact: false };
  const clock = new FakeClock();
  const sent: Sent[] = [];
  const held: Array<() => void> = [];
  const sink = new PhoneSink({
    protocol: protocol(options.acks ?? true),
    stream: stream(format, framing),
    transport: {
      send(message: OutboundMessage, onSent: () => void) {
        if (typeof message !== 'string') sent.push({ kind: 'media', bytes: message });
        else {
          const m = JSON.parse(message) as { kind: string; name?: string };
          sent.push(m.kind === 'mark' ? { kind: 'mark', name: m.name! } : { kind: 'clear' });
        }
        if (options.holdCallbacks) held.push(onSent);
        else onSent();
      },
    },
    clock,
    ...(options.maxInFlightBytes ? { maxInFlightBytes: options.maxInFlightBytes } : {}),
    ...(options.burstFrames ? { burstFrames: options.burstFrames } : {}),
  });
  const playout: Array<{ name: string; positionMs: number; outcome: PlayoutOutcome }> = [];
  sink.on('playout', (p) => playout.push(p));
  const media = (): Uint8Array[] => sent.filter((s) => s.kind === 'media').map((s) => s.bytes);
  const marks = (): string[] => sent.filter((s) => s.kind === 'mark').map((s) => s.name);
  return { clock, sink, sent, held, playout, media, marks };
}

function frame(format: WireFormat, fill: number): Uint8Array {
  const bytes = format.encoding === 's16le' ? 2 : 1;
  return new Uint8Array((format.sampleRate / 50) * bytes * format.channels).fill(fill);
}

describe('PhoneSink framing', () => {
  it('sends each 20 ms frame as its own message when the gateway takes 20 ms frames', async () => {
    const { sink, media } = setup({});
    for (let i = 0; i < 5; i++)
      await sink.write({ payload: frame(MULAW_8K, i + 1), epoch: 0, utteranceId: 'u' });
    expect(media().map((m) => m.length)).toEqual([160, 160, 160, 160, 160]);
    expect(media().map((m) => m[0])).toEqual([1, 2, 3, 4, 5]);
  });

  it('with burstFrames 2, the frames written in one turn of the event loop leave as one message', async () => {
    const { sink, media } = setup({ burstFrames: 2 });
    await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    await sink.write({ payload: frame(MULAW_8K, 2), epoch: 0, utteranceId: 'u' });
    expect(media()).toEqual([]); // held to the end of this turn
    await new Promise((r) => setImmediate(r));
    expect(media().map((m) => m.length)).toEqual([320]);
    expect([...media()[0]!.subarray(159, 161)]).toEqual([1, 2]);
    // A lone frame goes at the end of its turn, unpadded; a flush sends at once.
    await sink.write({ payload: frame(MULAW_8K, 3), epoch: 0, utteranceId: 'u' });
    await new Promise((r) => setImmediate(r));
    await sink.write({ payload: frame(MULAW_8K, 4), epoch: 0, utteranceId: 'u' });
    sink.flush();
    expect(media().map((m) => m.length)).toEqual([320, 160, 160]);
    expect(sink.writtenMs()).toBe(80);
    // A frame held when a clear comes is dropped with the rest, never sent after the clear.
    await sink.write({ payload: frame(MULAW_8K, 5), epoch: 0, utteranceId: 'u' });
    sink.clear();
    await new Promise((r) => setImmediate(r));
    expect(media()).toHaveLength(3);
  });

  it("Exotel's rule: messages of at least 3200 B in multiples of 320 B; the end padded with silence", async () => {
    const framing = { minBytes: 3200, multipleOfBytes: 320, maxBytes: 100_000, exact: false };
    const { sink, media } = setup({ format: L16_8K, framing });
    for (let i = 0; i < 12; i++) await sink.write({ payload: frame(L16_8K, 7), epoch: 0, utteranceId: 'u' });
    expect(media().map((m) => m.length)).toEqual([3200]); // 10 frames sent, 2 held back
    sink.flush();
    const all = media();
    expect(all.map((m) => m.length)).toEqual([3200, 3200]);
    // 2 frames of audio (640 B) then silence (s16le zeros): nothing lost, the padding is on the timeline.
    expect(all[1]!.subarray(0, 640).every((b) => b === 7)).toBe(true);
    expect(all[1]!.subarray(640).every((b) => b === 0)).toBe(true);
    expect(sink.writtenMs()).toBe(400);
  });

  it('exact framing (Vonage): every message is exactly one 20 ms frame, the last one padded', async () => {
    const framing = { minBytes: 320, multipleOfBytes: 320, maxBytes: 320, exact: true };
    const { sink, media } = setup({ format: L16_8K, framing, acks: false });
    for (let i = 0; i < 3; i++) await sink.write({ payload: frame(L16_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.flush();
    expect(media().map((m) => m.length)).toEqual([320, 320, 320]);
  });

  it("Asterisk's rule: whole multiples of optimal_frame_size, never more than the maximum", async () => {
    const framing = { minBytes: 480, multipleOfBytes: 480, maxBytes: 960, exact: false };
    const { sink, media } = setup({ framing });
    for (let i = 0; i < 10; i++)
      await sink.write({ payload: frame(MULAW_8K, 9), epoch: 0, utteranceId: 'u' });
    sink.flush();
    const sizes = media().map((m) => m.length);
    expect(sizes.every((n) => n % 480 === 0 && n <= 960)).toBe(true);
    // 1600 bytes of audio, padded with mu-law silence (0xFF) to 1920.
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(1920);
    expect(media().at(-1)!.at(-1)).toBe(0xff);
  });
});

describe('PhoneSink playout', () => {
  it('marks every 200 ms and at the end; returned marks become played events and move playedMs', async () => {
    const { sink, marks, playout, clock } = setup({});
    for (let i = 0; i < 25; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.flush();
    expect(marks()).toEqual(['m1', 'm2', 'm3']);
    await clock.advance(400);
    sink.onMark('m2', undefined); // m1 implied: marks return in order
    expect(playout).toEqual([
      { name: 'm1', positionMs: 200, outcome: 'played' },
      { name: 'm2', positionMs: 400, outcome: 'played' },
    ]);
    expect(sink.playedMs()).toBe(400);
    await clock.advance(50);
    expect(sink.playedMs()).toBe(450);
  });

  it('a clear resolves pending marks as cleared, ignores their late echoes, and drops older epochs', async () => {
    const { sink, playout, media, sent } = setup({});
    for (let i = 0; i < 15; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.clear();
    expect(sent.at(-1)).toEqual({ kind: 'clear' });
    expect(playout).toEqual([{ name: 'm1', positionMs: 200, outcome: 'cleared' }]);
    sink.onMark('m1', undefined); // Twilio echoes it after the clear: already resolved
    expect(playout).toHaveLength(1);
    const before = media().length;
    await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' }); // a straggler
    expect(media()).toHaveLength(before);
    await sink.write({ payload: frame(MULAW_8K, 2), epoch: 1, utteranceId: 'v' });
    expect(media()).toHaveLength(before + 1);
  });

  it('close() resolves marks still out as unknown', async () => {
    const { sink, playout } = setup({});
    for (let i = 0; i < 10; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.close();
    expect(playout.map((p) => p.outcome)).toEqual(['unknown']);
  });

  it('whenPlayed waits for the mark, and gives up on a lost one after the grace period', async () => {
    const { sink, clock } = setup({});
    for (let i = 0; i < 10; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.flush();
    let done = false;
    void sink.whenPlayed(200).then(() => (done = true));
    await clock.advance(300); // the clock says played, the mark is not back yet
    expect(done).toBe(false);
    sink.onMark('m1', undefined);
    await clock.advance(0);
    expect(done).toBe(true);
    for (let i = 0; i < 10; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.flush();
    let lost = false;
    void sink.whenPlayed(sink.writtenMs()).then(() => (lost = true));
    await clock.advance(1000);
    expect(lost).toBe(false);
    await clock.advance(2100);
    expect(lost).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('without marks, playout follows the local clock', async () => {
    const { sink, clock, marks } = setup({ acks: false });
    for (let i = 0; i < 10; i++)
      await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    sink.flush();
    expect(marks()).toEqual([]);
    await clock.advance(120);
    expect(sink.playedMs()).toBe(120);
  });
});

describe('PhoneSink backpressure and flow control', () => {
  it('write() waits while too many bytes are in flight, and goes on as the socket drains', async () => {
    const { sink, held } = setup({ holdCallbacks: true, maxInFlightBytes: 500, acks: false });
    const done: number[] = [];
    for (let i = 0; i < 4; i++) await sink.write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' });
    const blocked = sink
      .write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' })
      .then(() => done.push(1));
    await new Promise((r) => setImmediate(r));
    expect(done).toEqual([]);
    for (const cb of held.splice(0)) cb();
    await blocked;
    expect(done).toEqual([1]);
  });

  it('a paused gateway (Asterisk MEDIA_XOFF) holds frames until it resumes; a clear releases the writer', async () => {
    const { sink, media } = setup({});
    sink.setPaused(true);
    let written = false;
    const w = sink
      .write({ payload: frame(MULAW_8K, 1), epoch: 0, utteranceId: 'u' })
      .then(() => (written = true));
    await new Promise((r) => setImmediate(r));
    expect(written).toBe(false);
    expect(media()).toHaveLength(0);
    sink.setPaused(false);
    await w;
    expect(media()).toHaveLength(1);
    sink.setPaused(true);
    const stale = sink.write({ payload: frame(MULAW_8K, 2), epoch: 0, utteranceId: 'u' });
    sink.clear();
    sink.setPaused(false);
    await stale;
    expect(media()).toHaveLength(1); // the cleared epoch's frame never went out
  });
});
