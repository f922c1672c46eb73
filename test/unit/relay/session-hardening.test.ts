/**
 * A hostile relay app against one `RelaySession` (the second red team's findings, issue 39): a real
 * `ws` server plays the app, and the session's host is a small implementation of the `RelayHost` port
 * that records what it was asked to say. Each attack costs the app its own session at most, never the
 * process, and nothing it sends is held without bound.
 */
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RELAY_LIMITS } from '../../../src/relay/session.js';
import { until } from '../../helpers/relay-app.js';
import { errors, open, RecordingHost, send } from '../../helpers/relay-session.js';

const nested = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

describe('a relay app sending what it likes', () => {
  it('handoff data nested 5000 deep is an error, not a crash; the session goes on and ends as asked', async () => {
    const { app, outcome } = await open();
    app.socket.send(`{"type":"end","handoffData":${nested(5000)}}`);
    await until(() => errors(app).length === 1, 5000, 'the error');
    expect(errors(app)[0]).toMatch(/deeper than 32 levels/);
    // A shallow object is still taken, as its JSON.
    app.socket.send(`{"type":"end","handoffData":${nested(20)}}`);
    const ended = await outcome;
    expect(ended).toEqual({ reason: 'end', handoffData: nested(20) });
  });

  it('a message the session fails on costs that session (1011), never the process', async () => {
    const host = new RecordingHost();
    const { app, outcome } = await open({}, host);
    host.interruptThrows = true;
    // A preemptible answer, then a new one: preempting the first calls the host's interrupt, which throws.
    send(app, { type: 'text', token: 'One.', last: true, preemptible: true });
    send(app, { type: 'text', token: 'Two.', last: true });
    expect(await app.closed).toBe(1011);
    expect(await outcome).toEqual({ reason: 'closed', detail: 'a message could not be handled' });
  });

  it('1000 sendDigits of 64 keys: one plays, the others are refused until it has played', async () => {
    const { app, host } = await open({ messagesPerSecond: 1e6, messageBurst: 1e6 });
    const keys = '1234567890*#ABCD'.repeat(4);
    for (let i = 0; i < 1000; i++) send(app, { type: 'sendDigits', digits: keys });
    await until(() => errors(app).length === 999, 5000, '999 refusals');
    expect(host.digits).toEqual([keys]);
    expect(errors(app)[0]).toMatch(/64 keys are still to be played/);
    host.playDigits();
    await new Promise((r) => setTimeout(r, 20));
    send(app, { type: 'sendDigits', digits: '42' });
    await until(() => host.digits.length === 2, 5000, 'the next keys');
    expect(host.digits[1]).toBe('42');
  });

  it('1000 talk cycles: at most 8 wait to be spoken, the rest are refused with an error', async () => {
    const { app, host } = await open({ messagesPerSecond: 1e6, messageBurst: 1e6 });
    for (let i = 0; i < 1000; i++) send(app, { type: 'text', token: `Answer ${i}.`, last: true });
    await until(() => errors(app).length === 1000 - RELAY_LIMITS.cycles, 5000, 'the refusals');
    expect(host.said).toHaveLength(RELAY_LIMITS.cycles);
    expect(errors(app)[0]).toMatch(/8 answers are already waiting/);
    // One ends: the next answer is taken.
    host.said[0]!.end();
    await new Promise((r) => setTimeout(r, 20));
    send(app, { type: 'text', token: 'Now there is room.', last: true });
    await until(() => host.said.length === RELAY_LIMITS.cycles + 1, 5000, 'the next answer');
  });

  it('a talk cycle past 100,000 characters is cut, with an error', async () => {
    const { app, host } = await open({ messagesPerSecond: 1e6, messageBurst: 1e6 });
    const token = 'x'.repeat(16_000);
    for (let i = 0; i < 10; i++) send(app, { type: 'text', token });
    await until(() => errors(app).length === 1, 5000, 'the error');
    expect(errors(app)[0]).toMatch(/more than 100000 characters/);
    await until(() => host.said[0]!.tokens.length === 6, 5000, 'the tokens before the cut');
    send(app, { type: 'text', token: 'more', last: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(host.said[0]!.tokens).toHaveLength(6);
  });
});

describe('a relay app flooding its socket', () => {
  it('200,000 messages, nine in ten invalid, in one go: closed for its rate (1008) after its burst', async () => {
    const { app, session, outcome } = await open();
    const started = performance.now();
    const payload: string[] = [];
    for (let i = 0; i < 200_000; i++)
      payload.push(i % 10 === 9 ? JSON.stringify({ type: 'language', ttsLanguage: 'en-US' }) : 'not json');
    for (const m of payload) app.socket.send(m);
    expect(await outcome).toEqual({ reason: 'closed', detail: 'message rate too high' });
    expect(await app.closed).toBe(1008);
    // What it sent past its burst was not read: at most the burst's worth was answered.
    expect(session.stats.errors).toBeLessThanOrEqual(RELAY_LIMITS.messageBurst + 1);
    expect(performance.now() - started).toBeLessThan(30_000);
  });

  it('an app that stops reading and keeps sending is closed once a megabyte of ours waits for it', async () => {
    // The rate set high, so the unread bound (not the rate) is what ends it.
    const { app, outcome, session } = await open({ messagesPerSecond: 1e9, messageBurst: 1e9 });
    (app.socket as unknown as { _socket: Socket })._socket.pause();
    const rssBefore = process.memoryUsage().rss;
    let sent = 0;
    let ended = false;
    void outcome.then(() => (ended = true));
    // Nine unknown types and one valid message, over and over (the ten-invalid rule never fires).
    while (!ended && sent < 2_000_000) {
      for (let i = 0; i < 1000; i++, sent++)
        app.socket.send(i % 10 === 9 ? '{"type":"language"}' : `{"type":"nonsense-${i % 10}"}`);
      await new Promise((r) => setImmediate(r));
    }
    expect(await outcome).toEqual({ reason: 'closed', detail: 'the app does not read its socket' });
    expect(session.stats.errors).toBeGreaterThan(10);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
  }, 60_000);
});
