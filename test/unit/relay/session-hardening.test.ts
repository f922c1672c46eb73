/**
 * A hostile relay app against one `RelaySession` (the second red team's findings, issue 39): a real
 * `ws` server plays the app, and the session's host is a small implementation of the `RelayHost` port
 * that records what it was asked to say. Each attack costs the app its own session at most, never the
 * process, and nothing it sends is held without bound.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import pino from 'pino';
import twilio from 'twilio';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { rawText } from '../../../src/http/ws-data.js';
import {
  RELAY_LIMITS,
  RelaySession,
  type RelayHost,
  type RelayLimits,
  type RelayOutcome,
} from '../../../src/relay/session.js';
import type { InterruptResult, UtteranceHandle, UtteranceResult } from '../../../src/speaker/speaker.js';
import { until } from '../../helpers/relay-app.js';

type Message = Record<string, unknown> & { type: string };

/** A host that takes what it is asked to say and ends each utterance when the test says so. */
class RecordingHost implements RelayHost {
  readonly setup = {
    callSid: 'CA-hardening',
    from: '+15550000001',
    to: '+15550000002',
    direction: 'inbound',
    callType: 'PSTN',
    customParameters: {},
    voxbridge: { gateway: 'twilio' },
  };
  readonly said: Array<{
    tokens: string[];
    end: (r?: Partial<UtteranceResult>) => void;
    voiceId: string | undefined;
  }> = [];
  readonly digits: string[] = [];
  /** Resolves every `sendDigits` in flight. */
  private digitsPlayed: Array<() => void> = [];
  interruptThrows = false;
  private next = 0;

  say(text: AsyncIterable<string>, options: { voiceId?: string | undefined } = {}): UtteranceHandle {
    const tokens: string[] = [];
    let end!: (r?: Partial<UtteranceResult>) => void;
    const result = new Promise<UtteranceResult>((resolve) => {
      end = (r = {}) =>
        resolve({
          status: 'played',
          playedMs: 0,
          heardText: '',
          metrics: {
            firstByteMs: undefined,
            firstFrameMs: undefined,
            underruns: 0,
            cachedSegments: 0,
            requestedSegments: 0,
          },
          ...r,
        });
    });
    void (async () => {
      for await (const t of text) tokens.push(t);
    })();
    this.said.push({ tokens, end, voiceId: options.voiceId });
    return { id: `u${this.next++}`, result };
  }

  interrupt(): InterruptResult {
    if (this.interruptThrows) throw new Error('the host broke');
    return { interrupted: false, playedMs: 0, heardText: '' };
  }

  readonly sendDigits = (digits: string): Promise<void> => {
    this.digits.push(digits);
    return new Promise<void>((resolve) => this.digitsPlayed.push(resolve));
  };

  playDigits(): void {
    for (const r of this.digitsPlayed.splice(0)) r();
  }
}

interface AppSide {
  socket: WebSocket;
  received: Message[];
  closed: Promise<number>;
}

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

async function open(
  limits: Partial<RelayLimits> = {},
  host = new RecordingHost(),
  settings: {
    twilioAuthToken?: string;
    path?: string;
    voiceId?: string;
    languages?: Record<string, { voiceId: string }>;
  } = {},
): Promise<{
  session: RelaySession;
  host: RecordingHost;
  app: AppSide;
  outcome: Promise<RelayOutcome>;
  url: string;
  handshake: IncomingMessage;
}> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(server);
  await once(server, 'listening');
  const connected = once(server, 'connection') as Promise<[WebSocket, IncomingMessage]>;
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}${settings.path ?? '/'}`;
  const session = new RelaySession(
    host,
    {
      url,
      twilioAuthToken: settings.twilioAuthToken,
      headers: {},
      welcome: undefined,
      welcomeInterruptible: undefined,
      interruptible: 'any',
      dtmf: true,
      voiceId: settings.voiceId,
      languages: settings.languages,
      connectTimeoutMs: 5000,
      limits,
    },
    pino({ level: 'silent' }),
  );
  const outcome = session.start();
  const [socket, handshake] = await connected;
  const received: Message[] = [];
  socket.on('message', (d) => received.push(JSON.parse(rawText(d)) as Message));
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
  await until(() => received.some((m) => m.type === 'setup'), 5000, 'setup');
  return { session, host, app: { socket, received, closed }, outcome, url, handshake };
}

const send = (app: AppSide, m: unknown): void => app.socket.send(JSON.stringify(m));
const errors = (app: AppSide): string[] =>
  app.received.filter((m) => m.type === 'error').map((m) => String(m['description']));
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

describe('the handshake, as Twilio makes it', () => {
  it('carries X-Twilio-Signature over the app URL when TWILIO_AUTH_TOKEN is set, checked by twilio', async () => {
    const token = 'twilio-auth-token-0123456789';
    const { handshake, url, app } = await open({}, new RecordingHost(), {
      twilioAuthToken: token,
      path: '/relay?tenant=acme',
    });
    const signature = handshake.headers['x-twilio-signature'];
    expect(typeof signature).toBe('string');
    expect(twilio.validateRequest(token, signature as string, url, {})).toBe(true);
    expect(twilio.validateRequest('another-token', signature as string, url, {})).toBe(false);
    // The token itself goes nowhere.
    expect(JSON.stringify(handshake.headers)).not.toContain(token);
    expect(JSON.stringify(app.received)).not.toContain(token);
  });

  it('opens the URL with the call’s fields put in, and signs that URL', async () => {
    const token = 'twilio-auth-token-0123456789';
    const { handshake, url } = await open({}, new RecordingHost(), {
      twilioAuthToken: token,
      path: '/relay/{callSid}?from={from}&plan={param.plan}',
    });
    expect(handshake.url).toBe('/relay/CA-hardening?from=%2B15550000001&plan=');
    const opened = url.replace(/\/relay.*$/, handshake.url!);
    expect(twilio.validateRequest(token, handshake.headers['x-twilio-signature'] as string, opened, {})).toBe(
      true,
    );
  });

  it('carries no signature without the token', async () => {
    const { handshake } = await open();
    expect(handshake.headers['x-twilio-signature']).toBeUndefined();
  });
});

describe('languages and voices', () => {
  const languages = { 'es-ES': { voiceId: 'voice-es' }, 'fr-FR': { voiceId: 'voice-fr' } };

  it('speaks each answer in the voice of its language: the session’s, a text’s own, the same language elsewhere', async () => {
    const { app, host } = await open({}, new RecordingHost(), { voiceId: 'voice-en', languages });
    send(app, { type: 'text', token: 'Hello.', last: true });
    await until(() => host.said.length === 1, 5000, 'the first answer');
    host.said[0]!.end();
    send(app, { type: 'language', ttsLanguage: 'es-ES', transcriptionLanguage: 'es-ES' });
    send(app, { type: 'text', token: 'Hola.', last: true });
    await until(() => host.said.length === 2, 5000, 'the second answer');
    host.said[1]!.end();
    send(app, { type: 'text', token: 'Bonjour.', lang: 'fr-CA', last: true });
    await until(() => host.said.length === 3, 5000, 'the third answer');
    host.said[2]!.end();
    expect(host.said.map((s) => s.voiceId)).toEqual(['voice-en', 'voice-es', 'voice-fr']);
    expect(errors(app)).toEqual([]);
  });

  it('a language with no voice is spoken in the default one, and the app is told once', async () => {
    const { app, host } = await open({}, new RecordingHost(), { voiceId: 'voice-en', languages });
    for (let i = 0; i < 3; i++) {
      send(app, { type: 'text', token: 'Guten Tag.', lang: 'de-DE', last: true });
      await until(() => host.said.length === i + 1, 5000, 'the answer');
      host.said[i]!.end();
    }
    expect(host.said.map((s) => s.voiceId)).toEqual(['voice-en', 'voice-en', 'voice-en']);
    expect(errors(app)).toEqual(['no voice is configured for language de-DE: the default voice speaks it']);
  });
});
