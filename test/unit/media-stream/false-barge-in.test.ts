/**
 * Taking back a false barge-in, on a real speaker (fake clock, a source with exact character
 * timings): where the rest of a cut text starts, which turns resume it, and what makes it real.
 */
import { describe, expect, it } from 'vitest';
import {
  FalseBargeIn,
  MAX_RESUMES,
  resumeFrom,
  type BargeInResumed,
  type FalseBargeInSettings,
} from '../../../adapters/media-stream/false-barge-in.js';
import { toWire } from '../../../adapters/media-stream/call-events.js';
import { Speaker, type SayOptions } from '../../../src/speaker/speaker.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { RecordingSink } from '../../helpers/recording-sink.js';
import { TimedSource } from '../../helpers/timed-source.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
const SETTINGS: FalseBargeInSettings = { enabled: true, windowMs: 2000, maxSpeechMs: 600 };
const TEXT = 'Thanks for calling, your order number is four two seven; it ships tomorrow morning.';
const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== '');

function setup(settings: FalseBargeInSettings = SETTINGS, canResume = true) {
  const clock = new FakeClock(1000);
  const sink = new RecordingSink(MULAW_8K, clock);
  const speaker = new Speaker({ source: new TimedSource(clock), sink, voiceId: 'v', clock });
  const resumed: BargeInResumed[] = [];
  const fb: FalseBargeIn = new FalseBargeIn({
    speaker,
    settings,
    clock,
    say: (text, o) => say(text, o),
    canResume: () => canResume,
    onResumed: (r) => resumed.push(r),
  });
  const say = (text: string, o: SayOptions = {}) => {
    const handle = speaker.say(text, o);
    fb.track(handle.id, text, o);
    return handle;
  };
  return { clock, sink, speaker, fb, say, resumed };
}

/** A turn of `speechMs` on the inbound timeline. */
const turn = (speechMs: number) => ({ startMs: 5000, endMs: 5000 + speechMs, decidedMs: 5700 + speechMs });

describe('resumeFrom', () => {
  it('starts at the first word not heard whole: a word cut inside is said again whole', () => {
    const text = 'Thanks for calling, your order is ready.';
    expect(resumeFrom(text, '')).toBe(text);
    expect(resumeFrom(text, 'Tha')).toBe(text);
    expect(resumeFrom(text, 'Thanks')).toBe('for calling, your order is ready.');
    expect(resumeFrom(text, 'Thanks for call')).toBe('calling, your order is ready.');
    // The word was heard; only its comma was not.
    expect(resumeFrom(text, 'Thanks for calling')).toBe('your order is ready.');
    expect(resumeFrom(text, 'Thanks for calling,')).toBe('your order is ready.');
    expect(resumeFrom(text, 'Thanks for calling, your order is ready')).toBe('');
    expect(resumeFrom(text, text)).toBe('');
    expect(resumeFrom(text, 'something else')).toBeUndefined();
  });

  it('keeps apostrophes, digits and letters beyond ASCII inside their word', () => {
    expect(resumeFrom("We don't close", 'We don')).toBe("don't close");
    expect(resumeFrom("We don't close", "We don'")).toBe("don't close");
    expect(resumeFrom('Call 555-0100 now', 'Call 555-')).toBe('555-0100 now');
    expect(resumeFrom('Café crème, merci', 'Café cr')).toBe('crème, merci');
    expect(resumeFrom('  Leading space.', '  Lead')).toBe('Leading space.');
  });

  it('for every cut, what was heard whole and the rest give the text word for word', () => {
    for (let cut = 0; cut <= TEXT.length; cut++) {
      const heard = TEXT.slice(0, cut).trimEnd();
      const rest = resumeFrom(TEXT, heard)!;
      const all = words(TEXT);
      const restWords = words(rest);
      const heardWhole = all.slice(0, all.length - restWords.length);
      expect(restWords).toEqual(all.slice(all.length - restWords.length));
      // Every word before the rest was heard to its last letter; the one the rest starts with was not.
      expect(heard.length).toBeGreaterThanOrEqual(
        heardWhole.join(' ').replace(/[^\p{L}\p{N}]+$/u, '').length,
      );
      if (restWords.length > 0)
        expect(heard.length).toBeLessThan(
          TEXT.length - rest.length + restWords[0]!.replace(/[^\p{L}\p{N}]+$/u, '').length,
        );
    }
  });
});

describe('FalseBargeIn', () => {
  it('a short turn within the window resumes the cut text from the first word not heard whole, first in the queue', async () => {
    const { clock, sink, speaker, fb, say, resumed } = setup();
    const cut = say(TEXT);
    const next = say('And then the next prompt.');
    await clock.advance(1130); // mid-word on a 50 ms character clock
    const r = fb.interrupt();
    expect(r.interrupted).toBe(true);
    expect(fb.state.status).toBe('pending');
    expect(speaker.holding).toBe(true);
    expect((await cut.result).status).toBe('interrupted');
    const framesAtCut = sink.frames.length;
    await clock.advance(900);
    // Nothing plays while the decision is pending.
    expect(sink.frames).toHaveLength(framesAtCut);
    fb.turnEnded(turn(450));
    expect(fb.state.status).toBe('idle');
    expect(resumed).toHaveLength(1);
    const { fromText, resumedUtteranceId } = resumed[0]!;
    expect(resumed[0]!.utteranceId).toBe(cut.id);
    expect(fromText).toBe(resumeFrom(TEXT, r.heardText));
    // Cut inside a word: that word is said again whole, and nothing before it.
    expect(r.heardText).toMatch(/\p{L}$/u);
    expect(TEXT.startsWith(r.heardText)).toBe(true);
    expect(words(TEXT).slice(-words(fromText).length)).toEqual(words(fromText));
    const decision = await fb.decisionFor(cut.id);
    expect(decision).toMatchObject({ status: 'resumed', fromText });
    await clock.advance(15_000);
    expect((await next.result).status).toBe('played');
    const order = [...new Set(sink.frames.map((f) => f.utteranceId))];
    expect(order).toEqual([cut.id, resumedUtteranceId, next.id]);
  });

  it('a resumed utterance cut again by a second false barge-in resumes again from its own rest', async () => {
    const { clock, fb, say, resumed } = setup();
    say(TEXT);
    await clock.advance(800);
    const first = fb.interrupt();
    fb.turnEnded(turn(300));
    await clock.advance(1500);
    const second = fb.interrupt();
    expect(second.interrupted).toBe(true);
    fb.turnEnded(turn(300));
    expect(resumed).toHaveLength(2);
    const [a, b] = resumed;
    expect(b!.utteranceId).toBe(a!.resumedUtteranceId);
    expect(b!.fromText).toBe(resumeFrom(a!.fromText, second.heardText));
    // Heard of the first, heard of the second, and the last rest: the text, no word twice or missing.
    const heardWhole = (text: string, rest: string): string[] =>
      words(text).slice(0, words(text).length - words(rest).length);
    expect([
      ...heardWhole(TEXT, a!.fromText),
      ...heardWhole(a!.fromText, b!.fromText),
      ...words(b!.fromText),
    ]).toEqual(words(TEXT));
    expect(first.heardText.length).toBeGreaterThan(0);
  });

  it(`takes one utterance back at most MAX_RESUMES (${MAX_RESUMES}) times: then the barge-in is real`, async () => {
    const { clock, sink, fb, say, resumed } = setup();
    say(TEXT);
    const next = say('And then the next prompt.');
    // The echo of every rest cuts it a few hundred ms in, and each cut is a short "turn".
    for (let i = 0; i < MAX_RESUMES; i++) {
      await clock.advance(400);
      expect(fb.interrupt().interrupted).toBe(true);
      expect(fb.state.status).toBe('pending');
      fb.turnEnded(turn(300));
    }
    expect(resumed).toHaveLength(MAX_RESUMES);
    await clock.advance(400);
    const last = fb.interrupt();
    expect(last.interrupted).toBe(true);
    // Not held: the queue is dropped as by a plain barge-in, and nothing more is resumed.
    expect(fb.state.status).toBe('idle');
    fb.turnEnded(turn(300));
    expect(resumed).toHaveLength(MAX_RESUMES);
    expect((await next.result).status).not.toBe('played');
    const framesAtCut = sink.frames.length;
    await clock.advance(5000);
    expect(sink.frames).toHaveLength(framesAtCut);
    // A new utterance the app says is taken back again as before.
    const fresh = say(TEXT);
    await clock.advance(800);
    expect(fb.interrupt().interrupted).toBe(true);
    fb.turnEnded(turn(300));
    expect(resumed.at(-1)!.utteranceId).toBe(fresh.id);
  });

  it('a longer turn makes it real: the held queue is dropped and nothing more plays', async () => {
    const { clock, sink, fb, say, resumed } = setup();
    const cut = say(TEXT);
    const next = say('And then the next prompt.');
    await clock.advance(1000);
    fb.interrupt();
    const framesAtCut = sink.frames.length;
    fb.turnEnded(turn(601));
    expect(resumed).toEqual([]);
    expect(await fb.decisionFor(cut.id)).toEqual({ status: 'real', reason: 'long-turn' });
    expect((await next.result).status).toBe('interrupted');
    await clock.advance(5000);
    expect(sink.frames).toHaveLength(framesAtCut);
  });

  it('a turn still going when the window closes makes it real; a late turn end changes nothing', async () => {
    const { clock, fb, say, speaker, resumed } = setup();
    const cut = say(TEXT);
    const next = say('And then the next prompt.');
    await clock.advance(1000);
    fb.interrupt();
    await clock.advance(1999);
    expect(fb.state.status).toBe('pending');
    await clock.advance(1);
    expect(fb.state.status).toBe('idle');
    expect(speaker.holding).toBe(false);
    expect(await fb.decisionFor(cut.id)).toEqual({ status: 'real', reason: 'window' });
    expect((await next.result).status).toBe('interrupted');
    fb.turnEnded(turn(200));
    expect(resumed).toEqual([]);
  });

  it("a key, the app's interrupt or the call ending makes it real at once", async () => {
    for (const reason of ['dtmf', 'interrupt', 'ended'] as const) {
      const { clock, fb, say, resumed } = setup();
      const cut = say(TEXT);
      const next = say('And then the next prompt.');
      await clock.advance(1000);
      fb.interrupt();
      if (reason === 'ended') fb.close();
      else fb.real(reason);
      expect(await fb.decisionFor(cut.id)).toEqual({ status: 'real', reason });
      expect((await next.result).status).toBe('interrupted');
      fb.turnEnded(turn(200));
      expect(resumed).toEqual([]);
    }
  });

  it('what is said while the decision is pending is kept when it turns out real', async () => {
    const { clock, fb, say } = setup();
    say(TEXT);
    await clock.advance(1000);
    fb.interrupt();
    const answer = say('Yes? How can I help?');
    fb.real('dtmf');
    await clock.advance(5000);
    expect((await answer.result).status).toBe('played');
  });

  it('a second onset while pending interrupts nothing: the turn decides', async () => {
    const { clock, fb, say } = setup();
    say(TEXT);
    await clock.advance(1000);
    expect(fb.interrupt().interrupted).toBe(true);
    expect(fb.interrupt()).toEqual({ interrupted: false, playedMs: 0, heardText: '' });
    expect(fb.state.status).toBe('pending');
  });

  it('is a plain barge-in for a streamed text, audio, an untracked utterance, when off, or in a relay', async () => {
    const streamed = async function* (): AsyncGenerator<string> {
      yield 'A streamed reply that goes on for a while. ';
      yield 'And on.';
    };
    const cases: Array<[string, (s: ReturnType<typeof setup>) => void, FalseBargeInSettings?, boolean?]> = [
      ['streamed', (s) => s.speaker.say(streamed())],
      ['audio', (s) => s.speaker.say({ audio: new Uint8Array(48_000 * 4), text: 'tones' })],
      ['untracked', (s) => s.speaker.say(TEXT)],
      ['off', (s) => s.say(TEXT), { ...SETTINGS, enabled: false }],
      ['relay', (s) => s.say(TEXT), SETTINGS, false],
    ];
    for (const [name, start, settings, canResume] of cases) {
      const s = setup(settings, canResume);
      start(s);
      const next = s.say('Queued.');
      await s.clock.advance(500);
      expect(s.fb.interrupt().interrupted, name).toBe(true);
      expect(s.fb.state.status, name).toBe('idle');
      expect(s.speaker.holding, name).toBe(false);
      expect((await next.result).status, name).toBe('interrupted');
    }
  });

  it('cuts nothing and holds nothing when nothing plays, or what plays may not be cut', async () => {
    const idle = setup();
    expect(idle.fb.interrupt().interrupted).toBe(false);
    expect(idle.speaker.holding).toBe(false);
    const { clock, fb, say, speaker } = setup();
    const announcement = say('This announcement must be heard in full.', { interruptible: false });
    const next = say('Queued.');
    await clock.advance(500);
    expect(fb.interrupt().interrupted).toBe(false);
    expect(fb.state.status).toBe('idle');
    expect(speaker.holding).toBe(false);
    await clock.advance(10_000);
    expect((await announcement.result).status).toBe('played');
    expect((await next.result).status).toBe('played');
  });

  it('goes on the wire as barge-in.resumed, snake_case', () => {
    const event = {
      seq: 9,
      at: '2030-01-01T00:00:00.000Z',
      callId: 'CA1',
      type: 'barge-in.resumed' as const,
      utteranceId: 'u1',
      resumedUtteranceId: 'u2',
      fromText: 'calling, your order is ready.',
    };
    expect(toWire(event)).toEqual({
      type: 'barge-in.resumed',
      seq: 9,
      at: '2030-01-01T00:00:00.000Z',
      call_id: 'CA1',
      utterance_id: 'u1',
      resumed_utterance_id: 'u2',
      from_text: 'calling, your order is ready.',
    });
  });
});
