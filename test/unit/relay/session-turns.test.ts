/**
 * What a relay session does for the caller's turns (issue 45): partial prompts, a talk cycle held for
 * a barge-in's decision (the app's tokens kept meanwhile) and resumed or interrupted, and the turn's
 * gap reported once its answer is heard. Against a real `ws` app on loopback, the host recording.
 */
import { describe, expect, it } from 'vitest';
import type { TurnGap } from '../../../src/relay/session.js';
import { until } from '../../helpers/relay-app.js';
import { open, RecordingHost, send } from '../../helpers/relay-session.js';

const METRICS = { underruns: 0, cachedSegments: 0, requestedSegments: 0 };

describe('prompts', () => {
  it('sends partial prompts with last: false and the turn with last: true', async () => {
    const { session, app } = await open();
    session.prompt('I would', 'en-US', undefined, { last: false });
    session.prompt('I would like a table', 'en-US', undefined, { last: false });
    session.prompt('I would like a table.', 'en-US');
    await until(() => app.received.filter((m) => m.type === 'prompt').length === 3, 5000, 'the prompts');
    expect(app.received.filter((m) => m.type === 'prompt')).toEqual([
      { type: 'prompt', voicePrompt: 'I would', lang: 'en-US', last: false },
      { type: 'prompt', voicePrompt: 'I would like a table', lang: 'en-US', last: false },
      { type: 'prompt', voicePrompt: 'I would like a table.', lang: 'en-US', last: true },
    ]);
  });
});

describe('a talk cycle held for a barge-in', () => {
  async function held(): Promise<Awaited<ReturnType<typeof open>>> {
    const opened = await open({}, new RecordingHost(), { events: new Set(['tokens-played']) });
    const { session, app, host } = opened;
    send(app, { type: 'text', token: 'One two ' });
    send(app, { type: 'text', token: 'three ' });
    await until(() => host.said[0]?.tokens.length === 2, 5000, 'the tokens');
    host.said[0]!.heard();
    await new Promise((r) => setTimeout(r, 10));
    expect(session.suspend({ utteranceId: 'u0', heardText: 'One tw', playedMs: 480 })).toBe(true);
    host.said[0]!.end({ status: 'interrupted', heardText: 'One tw' });
    // The app goes on sending its answer meanwhile.
    send(app, { type: 'text', token: 'four five.', last: true });
    await new Promise((r) => setTimeout(r, 50));
    return opened;
  }

  it('resumes a backchannel from the first word not heard whole, with the tokens that came meanwhile, and tells the app nothing', async () => {
    const { session, app, host } = await held();
    expect(session.bargeInWasBackchannel()).toBe('u1');
    await until(() => host.said[1]?.tokens.length === 1, 5000, 'the rest');
    expect(host.said[1]!.tokens).toEqual(['two three four five.']);
    host.said[1]!.heard();
    host.said[1]!.end({ status: 'played', heardText: 'two three four five.' });
    await until(() => app.received.some((m) => m.type === 'info'), 5000, 'tokensPlayed');
    // What was heard of the whole answer, before and after the backchannel; no interrupt.
    expect(app.received.filter((m) => m.type !== 'setup')).toEqual([
      { type: 'info', name: 'tokensPlayed', value: 'One two three four five.' },
    ]);
  });

  it('sends tokens that come after the resume to the rest', async () => {
    const { session, app, host } = await open();
    send(app, { type: 'text', token: 'Alpha beta ' });
    await until(() => host.said[0]?.tokens.length === 1, 5000, 'the tokens');
    expect(session.suspend({ utteranceId: 'u0', heardText: 'Alpha', playedMs: 300 })).toBe(true);
    host.said[0]!.end({ status: 'interrupted', heardText: 'Alpha' });
    await new Promise((r) => setTimeout(r, 10));
    expect(session.bargeInWasBackchannel()).toBe('u1');
    send(app, { type: 'text', token: 'gamma.', last: true });
    await until(() => host.said[1]?.tokens.length === 2, 5000, 'the rest');
    expect(host.said[1]!.tokens).toEqual(['beta ', 'gamma.']);
  });

  it('interrupts when the barge-in was real: what was heard, then its tokens are dropped', async () => {
    const { session, app, host } = await held();
    session.bargeInWasReal();
    await until(() => app.received.some((m) => m.type === 'info'), 5000, 'tokensPlayed');
    expect(app.received.filter((m) => m.type !== 'setup')).toEqual([
      { type: 'interrupt', utteranceUntilInterrupt: 'One tw', durationUntilInterruptMs: 480 },
      { type: 'info', name: 'tokensPlayed', value: 'One tw' },
    ]);
    // Nothing more of that answer is said.
    expect(session.bargeInWasBackchannel()).toBeUndefined();
    expect(host.said).toHaveLength(1);
  });

  it('holds only the app’s text cycles', async () => {
    const { session } = await open();
    expect(session.suspend({ utteranceId: 'not-ours', heardText: '', playedMs: 0 })).toBe(false);
    expect(session.suspend({ utteranceId: undefined, heardText: '', playedMs: 0 })).toBe(false);
  });
});

describe("a turn's gap", () => {
  it('goes to the host once the answer to the prompt is heard, with its parts', async () => {
    const gaps: TurnGap[] = [];
    class GapHost extends RecordingHost {
      readonly turnGap = (gap: TurnGap): void => void gaps.push(gap);
    }
    const { session, app, host } = await open({}, new GapHost());
    session.prompt('Partial', 'en-US', undefined, { last: false });
    session.prompt('What time is it?', 'en-US', undefined, {
      timing: { endpointingMs: 280, sttMs: 160, via: 'realtime' },
    });
    await new Promise((r) => setTimeout(r, 40));
    send(app, { type: 'text', token: 'It is noon.', last: true });
    await until(() => host.said.length === 1, 5000, 'the answer');
    host.said[0]!.end({ metrics: { ...METRICS, firstByteMs: 90, firstFrameMs: 120 } });
    await until(() => gaps.length === 1, 5000, 'the gap');
    const [gap] = gaps;
    expect(gap).toMatchObject({
      endpointingMs: 280,
      sttMs: 160,
      via: 'realtime',
      firstByteMs: 90,
      firstFrameMs: 120,
    });
    expect(gap!.appMs).toBeGreaterThanOrEqual(35);
    expect(gap!.gapMs).toBeCloseTo(280 + 160 + gap!.appMs + 120, 6);
    // One answer per turn: the next talk cycle answers none.
    send(app, { type: 'text', token: 'Anything else?', last: true });
    await until(() => host.said.length === 2, 5000, 'the second answer');
    host.said[1]!.end({ metrics: { ...METRICS, firstByteMs: 50, firstFrameMs: 60 } });
    await new Promise((r) => setTimeout(r, 50));
    expect(gaps).toHaveLength(1);
  });
});
