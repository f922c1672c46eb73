/** The softphone's playout on a hand-driven clock: real-time audio, Twilio's mark and clear rules. */
import { describe, expect, it } from 'vitest';
import { Playout } from '../../../src/cli/playout.js';

function setup() {
  let now = 0;
  const played: number[] = [];
  const marks: string[] = [];
  const playout = new Playout({
    bytesPerMs: 8,
    silence: 0xff,
    onPlay: (bytes) => played.push(...bytes),
    onMark: (name) => marks.push(name),
    now: () => now,
  });
  playout.start(false);
  const advance = (ms: number): void => {
    now += ms;
    playout.tick();
  };
  return { playout, played, marks, advance };
}

const audio = (ms: number, value = 0x10): Uint8Array => new Uint8Array(ms * 8).fill(value);
const bytes = (count: number, value: number): number[] => new Array<number>(count).fill(value);

describe('Playout', () => {
  it('plays audio at real time, and silence when there is none', () => {
    const { playout, played, advance } = setup();
    advance(20);
    expect(played).toEqual(bytes(160, 0xff));
    playout.audio(audio(30));
    advance(20);
    expect(played.slice(160)).toEqual(bytes(160, 0x10));
    advance(20);
    // 10 ms of audio left, then silence: the timeline never stops.
    expect(played.slice(320)).toEqual([...bytes(80, 0x10), ...bytes(80, 0xff)]);
    expect(playout.audioPlayedMs).toBe(30);
    expect(playout.positionMs).toBe(60);
  });

  it('returns a mark once the audio before it has played, at once when nothing is queued', () => {
    const { playout, marks, advance } = setup();
    playout.mark('idle');
    expect(marks).toEqual(['idle']);
    playout.audio(audio(40));
    playout.mark('m1');
    advance(20);
    expect(marks).toEqual(['idle']);
    advance(20);
    expect(marks).toEqual(['idle', 'm1']);
  });

  it('clear drops the queued audio and returns every pending mark', () => {
    const { playout, played, marks, advance } = setup();
    playout.audio(audio(100));
    playout.mark('a');
    playout.audio(audio(100));
    playout.mark('b');
    advance(20);
    playout.clear();
    expect(marks).toEqual(['a', 'b']);
    advance(20);
    expect(played.slice(160)).toEqual(bytes(160, 0xff));
    expect(playout.audioPlayedMs).toBe(20);
  });

  it('tells how long the bot has been quiet after speaking', () => {
    const { playout, advance } = setup();
    advance(500);
    expect(playout.quietForMs()).toBe(0); // it has not spoken yet
    playout.audio(audio(100));
    advance(60);
    expect(playout.quietForMs()).toBe(0);
    advance(40);
    advance(300);
    expect(playout.quietForMs()).toBe(300);
    playout.audio(audio(20));
    expect(playout.quietForMs()).toBe(0);
  });
});
