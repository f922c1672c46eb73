/**
 * What a relay session does for apps written for ConversationRelay (issue 43): the handshake Twilio
 * makes (its signature, a URL per call), languages and their voices, `play`, and the `info` messages
 * an app asks for with `debug` (who is speaking, what was heard).
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import twilio from 'twilio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wavFile } from '../../../src/audio/wav.js';
import { until } from '../../helpers/relay-app.js';
import { errors, open, RecordingHost, send, type AppSide } from '../../helpers/relay-session.js';

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

describe('play', () => {
  /** A file server on loopback: `/tone.wav` (0.5 s at 8 kHz), `/slow.wav` (the same, 300 ms late), `/big.wav`, `/moved`, `/missing`, `/text`. */
  let server: Server;
  let host: string;
  const tone = new Int16Array(4000).map((_, i) =>
    Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)),
  );
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/tone.wav')
        res.writeHead(200, { 'content-type': 'audio/wav' }).end(wavFile(tone, 8000));
      else if (req.url === '/big.wav') res.writeHead(200).end(wavFile(new Int16Array(200_000), 8000));
      else if (req.url === '/slow.wav') setTimeout(() => res.writeHead(200).end(wavFile(tone, 8000)), 300);
      else if (req.url === '/moved') res.writeHead(302, { location: 'http://example.invalid/x.wav' }).end();
      else if (req.url === '/text') res.writeHead(200).end('not audio at all');
      else res.writeHead(404).end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const limits = (): { hosts: string[]; maxBytes: number; timeoutMs: number } => ({
    hosts: [host],
    maxBytes: 64 * 1024,
    timeoutMs: 5000,
  });

  it('plays a WAV from an allowed host as the speaker’s audio, loop times over, in its place in the queue', async () => {
    const { app, host: h } = await open({}, new RecordingHost(), { play: limits() });
    send(app, { type: 'text', token: 'First this.', last: true });
    send(app, { type: 'play', source: `http://${host}/tone.wav`, loop: 2 });
    send(app, { type: 'text', token: 'Then this.', last: true });
    await until(() => h.said.length === 3, 5000, 'three answers');
    expect(h.said.map((s) => s.audio !== undefined)).toEqual([false, true, false]);
    const audio = await h.said[1]!.audio!;
    // 0.5 s at 24 kHz, 16-bit, played twice over by the speaker (the same memory each time).
    expect(audio.byteLength).toBeGreaterThan(0.49 * 48_000);
    expect(audio.byteLength).toBeLessThan(0.51 * 48_000);
    expect(h.said[1]!.repeat).toBe(2);
    expect(errors(app)).toEqual([]);
  });

  it('refuses a host it may not fetch from, a redirect, a file too big, a failure and what is not audio', async () => {
    const { app, host: h } = await open({}, new RecordingHost(), { play: limits() });
    send(app, { type: 'play', source: 'http://example.invalid/hold.mp3' });
    send(app, { type: 'play', source: 'file:///etc/passwd' });
    send(app, { type: 'play', source: 'not a url' });
    await until(() => errors(app).length === 3, 5000, 'three refusals');
    expect(h.said).toHaveLength(0);
    // One at a time: at most two files are fetched at once (the next test).
    for (const [i, path] of ['/moved', '/big.wav', '/missing', '/text'].entries()) {
      send(app, { type: 'play', source: `http://${host}${path}` });
      await until(() => errors(app).length === 4 + i, 5000, `failure ${i + 1}`);
    }
    expect(errors(app)).toEqual([
      'play: example.invalid is not among the hosts this relay may play from (play.hosts)',
      'play: only http and https sources are played (file:)',
      'play: "not a url" is not a URL',
      expect.stringMatching(/^play: 127\.0\.0\.1:\d+ could not be fetched/),
      expect.stringMatching(/^play: the file is (over )?\d+ bytes/),
      expect.stringMatching(/^play: 127\.0\.0\.1:\d+ answered 404$/),
      'play: not WAV or MP3 audio',
    ]);
    for (const s of h.said) await expect(s.audio).rejects.toThrow(/^play: /);
  });

  it('fetches at most two files at once: a third play meanwhile is refused, and each plays at most 1000 times', async () => {
    const { app, host: h } = await open({}, new RecordingHost(), { play: limits() });
    send(app, { type: 'play', source: `http://${host}/slow.wav`, loop: 0 });
    send(app, { type: 'play', source: `http://${host}/slow.wav` });
    send(app, { type: 'play', source: `http://${host}/slow.wav` });
    await until(() => errors(app).length === 1, 5000, 'the refusal');
    expect(errors(app)[0]).toBe('play refused: 2 files are being fetched already (at most 2)');
    expect(h.said.map((s) => s.repeat)).toEqual([1000, 1]);
    for (const s of h.said) await s.audio!;
    // Once they are in, another may be fetched.
    send(app, { type: 'play', source: `http://${host}/tone.wav` });
    await until(() => h.said.length === 3, 5000, 'the next play');
    expect(errors(app)).toHaveLength(1);
  });

  it('without play.hosts, every play is refused', async () => {
    const { app, host: h } = await open();
    send(app, { type: 'play', source: `http://${host}/tone.wav` });
    await until(() => errors(app).length === 1, 5000, 'the refusal');
    expect(errors(app)[0]).toMatch(/is not among the hosts this relay may play from/);
    expect(h.said).toHaveLength(0);
  });
});

describe('info messages, as `debug` asks for them', () => {
  const both = new Set(['speaker-events', 'tokens-played'] as const);
  /** What the app was sent after `setup`, in order: a type, or an info's name and value. */
  const sent = (app: AppSide): string[] =>
    app.received
      .filter((m) => m.type !== 'setup')
      .map((m) => (m.type === 'info' ? `${String(m['name'])} ${String(m['value'])}` : m.type));

  it('a played answer, the welcome too: agentSpeaking on when it is heard, off when it has played, then tokensPlayed', async () => {
    const { app, host } = await open({}, new RecordingHost(), {
      events: both,
      welcome: 'Hello! How can I help?',
    });
    await until(() => host.said.length === 1, 5000, 'the welcome');
    // Queued, not yet heard: nothing.
    expect(sent(app)).toEqual([]);
    host.said[0]!.heard();
    await until(() => sent(app).length === 1, 5000, 'agentSpeaking on');
    host.said[0]!.end({ heardText: 'Hello! How can I help?', playedMs: 1500 });
    send(app, { type: 'text', token: 'It is ', last: false });
    send(app, { type: 'text', token: 'sunny.', last: true });
    await until(() => host.said.length === 2, 5000, 'the answer');
    host.said[1]!.heard();
    await until(() => sent(app).length === 4, 5000, 'agentSpeaking on again');
    host.said[1]!.end({ heardText: 'It is sunny.', playedMs: 900 });
    await until(() => sent(app).length === 6, 5000, 'the answer played');
    expect(sent(app)).toEqual([
      'agentSpeaking on',
      'agentSpeaking off',
      'tokensPlayed Hello! How can I help?',
      'agentSpeaking on',
      'agentSpeaking off',
      'tokensPlayed It is sunny.',
    ]);
    const speaker = app.received.filter((m) => m['name'] === 'agentSpeaking');
    for (const m of speaker) {
      expect(Object.keys(m).sort()).toEqual(['name', 'ts', 'type', 'value']);
      expect(typeof m['ts']).toBe('number');
    }
    expect(Math.abs((speaker[0]!['ts'] as number) - Date.now())).toBeLessThan(10_000);
    expect(app.received.at(-1)).toEqual({ type: 'info', name: 'tokensPlayed', value: 'It is sunny.' });
  });

  it('answers heard back to back are one stretch: never on twice, never off while another is heard', async () => {
    const { app, host } = await open({}, new RecordingHost(), { events: both });
    send(app, { type: 'text', token: 'First.', last: true });
    send(app, { type: 'text', token: 'Second.', last: true });
    await until(() => host.said.length === 2, 5000, 'both answers');
    host.said[0]!.heard();
    host.said[1]!.heard();
    host.said[0]!.end({ heardText: 'First.' });
    await until(() => sent(app).length === 2, 5000, 'the first played');
    host.said[1]!.end({ heardText: 'Second.' });
    await until(() => sent(app).length === 4, 5000, 'the second played');
    expect(sent(app)).toEqual([
      'agentSpeaking on',
      'tokensPlayed First.',
      'agentSpeaking off',
      'tokensPlayed Second.',
    ]);
  });

  it('a cut answer: clientSpeaking on, agentSpeaking off, interrupt, tokensPlayed (what was heard), clientSpeaking off, prompt', async () => {
    const { app, host, session } = await open({}, new RecordingHost(), { events: both });
    send(app, { type: 'text', token: 'The weather today is sunny with a light breeze.', last: true });
    await until(() => host.said.length === 1, 5000, 'the answer');
    host.said[0]!.heard();
    await until(() => sent(app).length === 1, 5000, 'agentSpeaking on');
    // As a call's barge-in does it: the onset, then the cut (the utterance settles at once), then the app is told.
    session.callerSpeaking(true);
    host.said[0]!.end({ status: 'interrupted', heardText: 'The weather today', playedMs: 640 });
    session.interrupted({ utteranceId: 'u0', heardText: 'The weather today', playedMs: 640 });
    session.callerSpeaking(true); // a second onset in the same turn
    await until(() => sent(app).length === 5, 5000, 'the cut');
    session.callerSpeaking(false);
    session.prompt('What about tomorrow?', 'en');
    await until(() => sent(app).length === 7, 5000, 'the prompt');
    expect(sent(app)).toEqual([
      'agentSpeaking on',
      'clientSpeaking on',
      'agentSpeaking off',
      'interrupt',
      'tokensPlayed The weather today',
      'clientSpeaking off',
      'prompt',
    ]);
    const { ts, ...on } = app.received.find((m) => m['name'] === 'clientSpeaking')!;
    expect(on).toEqual({ type: 'info', name: 'clientSpeaking', value: 'on' });
    expect(typeof ts).toBe('number');
  });

  it('the caller speaking while the app is silent: clientSpeaking on at the onset, off when the turn ends', async () => {
    const { app, session } = await open({}, new RecordingHost(), { events: new Set(['speaker-events']) });
    session.callerSpeaking(true);
    session.callerSpeaking(true);
    session.callerSpeaking(false);
    session.callerSpeaking(false);
    session.prompt('Hello?', 'en');
    await until(() => sent(app).length === 3, 5000, 'the turn');
    expect(sent(app)).toEqual(['clientSpeaking on', 'clientSpeaking off', 'prompt']);
  });

  it('sends nothing the app did not ask for: no info without debug, only tokensPlayed for tokens-played', async () => {
    for (const [events, expected] of [
      [undefined, ['interrupt', 'prompt']],
      [new Set(['tokens-played'] as const), ['interrupt', 'tokensPlayed The weather', 'prompt']],
      [new Set(['debugging'] as const), ['interrupt', 'prompt']],
    ] as const) {
      const { app, host, session } = await open({}, new RecordingHost(), { events, welcome: 'Hi.' });
      await until(() => host.said.length === 1, 5000, 'the welcome');
      host.said[0]!.heard();
      host.said[0]!.end({ heardText: '' }); // nothing of it heard whole: no tokensPlayed either way
      send(app, { type: 'text', token: 'The weather today is sunny.', last: true });
      await until(() => host.said.length === 2, 5000, 'the answer');
      host.said[1]!.heard();
      session.callerSpeaking(true);
      host.said[1]!.end({ status: 'interrupted', heardText: 'The weather' });
      session.interrupted({ utteranceId: 'u1', heardText: 'The weather', playedMs: 500 });
      // The turn ends later (and its prompt later still, after speech-to-text).
      await until(() => sent(app).includes('interrupt'), 5000, 'the interrupt');
      session.callerSpeaking(false);
      session.prompt('Tomorrow?', 'en');
      await until(() => sent(app).includes('prompt'), 5000, 'the prompt');
      expect(sent(app)).toEqual(expected);
    }
  });
});
