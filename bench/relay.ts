/**
 * ConversationRelay, measured end to end on Twilio-protocol calls: an app streams its answer at an
 * LLM's pace (20 tokens per second) and we time the first audio at the gateway against the moment the
 * first clause was complete, beside the speech service's own first byte for that clause (the floor);
 * a caller's turn ends and we time the prompt against the end of their speech, less the configured
 * end-of-turn silence and the speech-to-text round trip; and the heard text at a barge-in, with the
 * service's character timings and with the estimate, against where the audio really was.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { decodeMulaw } from '../src/audio/g711.js';
import { rawText } from '../src/http/ws-data.js';
import { BUILT_IN_VOICE_ID } from '../src/service/voices/builtin.js';
import { TextLedger } from '../src/speaker/ledger.js';
import type { CharacterAlignment } from '../src/speech/alignment.js';
import { FakeStt, FAKE_STT_KEY } from '../testkit/fake-stt.js';
import { startBenchApp } from './app.js';
import { Caller, callerSpeech, until } from './barge-in.js';
import { fmt, median, percentile, printTable } from './stats.js';

const TOKEN_GAP_MS = 50;
const NAMES = [
  'Anna',
  'Bruno',
  'Chen',
  'Dana',
  'Emil',
  'Farah',
  'Goran',
  'Hana',
  'Ivo',
  'Jola',
  'Kofi',
  'Lena',
];
const END_OF_TURN_MS = 700;
const CALLER_LINES = [
  'What time do you open tomorrow?',
  'I would like to book a table for four.',
  'Can you tell me where you are located?',
  'Is there parking near the restaurant?',
];

interface Session {
  socket: WebSocket;
  callSid: string;
  prompts: Array<{ text: string; at: number }>;
}

class RelayApp {
  readonly sessions = new Map<string, Session>();
  private constructor(readonly server: WebSocketServer) {
    server.on('connection', (socket) => {
      socket.on('message', (data) => {
        const m = JSON.parse(rawText(data)) as Record<string, unknown>;
        if (m['type'] === 'setup') {
          const callSid = String(m['callSid']);
          this.sessions.set(callSid, { socket, callSid, prompts: [] });
        } else if (m['type'] === 'prompt') {
          for (const s of this.sessions.values())
            if (s.socket === socket)
              s.prompts.push({ text: String(m['voicePrompt']), at: performance.now() });
        }
      });
    });
  }

  static async start(): Promise<RelayApp> {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    return new RelayApp(server);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/relay`;
  }

  /**
   * Streams `text` word by word, TOKEN_GAP_MS apart; resolves with when the token that completes the
   * first clause (its ", ") left.
   */
  async stream(socket: WebSocket, text: string): Promise<{ firstAt: number; clauseAt: number }> {
    const tokens = text.match(/\S+\s*/g) ?? [];
    const firstAt = performance.now();
    let clauseAt = Number.NaN;
    for (const [i, token] of tokens.entries()) {
      socket.send(JSON.stringify({ type: 'text', token, last: i === tokens.length - 1 }));
      if (Number.isNaN(clauseAt) && token.includes(',')) clauseAt = performance.now();
      await new Promise((r) => setTimeout(r, TOKEN_GAP_MS));
    }
    return { firstAt, clauseAt };
  }

  async close(): Promise<void> {
    for (const s of this.sessions.values()) s.socket.terminate();
    await new Promise((r) => this.server.close(r));
  }
}

/** Heard-text error (characters) at random cuts: the ledger with the timings, and its estimate without. */
async function heardTextError(
  stream: (text: string) => Promise<{ audioMs: number; alignment: CharacterAlignment | undefined }>,
): Promise<{ estimate: number[]; timed: number[]; cuts: number }> {
  const texts = [
    'Our opening hours are from nine in the morning until six in the evening on weekdays.',
    'On Saturdays we open at ten, and we are closed on Sundays and public holidays.',
    'Your table for four is booked for eight o’clock tonight, under the name Smith.',
    'Parking is available behind the building, and the first two hours are free of charge.',
  ];
  const estimate: number[] = [];
  const timed: number[] = [];
  let seed = 7;
  for (const text of texts) {
    const { audioMs, alignment } = await stream(text);
    if (!alignment) throw new Error('the service sent no character timings');
    const segment = { start: 0, end: text.length, text };
    const truth = new TextLedger();
    truth.beginSegment(segment, alignment);
    truth.addAudio(audioMs);
    const guess = new TextLedger();
    guess.beginSegment(segment);
    guess.addAudio(audioMs);
    for (let k = 0; k < 25; k++) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const cutMs = (seed / 0x7fffffff) * audioMs;
      // Where the audio really was: the last character whose sound had ended (the timings, checked to
      // ±25 ms against the audio's energy by the service's tests).
      const real = truth.heardOffset(cutMs, text);
      timed.push(Math.abs(truth.heardOffset(cutMs, text) - real));
      estimate.push(Math.abs(guess.heardOffset(cutMs, text) - real));
    }
  }
  return { estimate, timed, cuts: estimate.length };
}

export async function benchRelay(calls = 4, rounds = 6): Promise<void> {
  const relay = await RelayApp.start();
  const stt = await FakeStt.start({ transcribe: () => 'A question from the caller.' });
  const bench = await startBenchApp(
    'relay',
    {
      calls: { defaultFlow: 'agent' },
      stt: { baseUrl: stt.url, endOfTurnMs: END_OF_TURN_MS },
      relays: { r: { url: relay.url } },
      flows: { agent: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'r' } } } },
    },
    { STT_API_KEY: FAKE_STT_KEY },
  );
  const { app } = bench;
  const callers: Caller[] = [];
  try {
    for (let i = 0; i < calls; i++) {
      const c = new Caller(`${app.url.replace('http:', 'ws:')}/media/twilio`, 9000 + i);
      await c.start();
      callers.push(c);
    }
    if (!(await until(() => callers.every((c) => relay.sessions.has(c.callSid)), 10_000)))
      throw new Error('relay sessions did not open');

    // 1. Tokens at 20 per second: the first clause complete → the first audio at the gateway.
    const clauseToAudio: number[] = [];
    const floor: number[] = [];
    const added: number[] = [];
    let n = 0;
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        callers.map(async (c) => {
          // A first clause never said before: not one answer comes from the phrase cache.
          const name = `${NAMES[n % NAMES.length]!} ${n++}`;
          const text = `Of course ${name}, I can help you with that booking right away. It is done.`;
          const before = c.mediaAt.length;
          const call = app.calls.get(c.callSid)!;
          const seq = call.eventsAfter(0).at(-1)?.seq ?? 0;
          const { firstAt, clauseAt } = await relay.stream(relay.sessions.get(c.callSid)!.socket, text);
          await until(() => c.mediaAt.length > before, 10_000);
          const audioAt = c.mediaAt[before]!;
          clauseToAudio.push(audioAt - clauseAt);
          await until(() => call.eventsAfter(seq).some((e) => e.type === 'utterance.finished'), 15_000);
          const finished = call.eventsAfter(seq).find((e) => e.type === 'utterance.finished');
          const firstByteMs = (finished as { result: { firstByteMs?: number } } | undefined)?.result
            .firstByteMs;
          if (firstByteMs === undefined) return;
          // The speech service's own first byte for this clause: say() began at the first token, and
          // the clause was requested once it was complete.
          const serviceFirstByte = firstByteMs - (clauseAt - firstAt);
          floor.push(serviceFirstByte);
          added.push(audioAt - clauseAt - serviceFirstByte);
        }),
      );
    }

    // 2. A caller's turn: the end of their speech → the STT request, and → the prompt at the app.
    const toStt: number[] = [];
    const toPrompt: number[] = [];
    const sttRoundTrip: number[] = [];
    // One caller at a time, so that each STT request is known to be this turn's.
    for (let round = 0; round < Math.ceil(rounds / 2); round++) {
      for (const [i, c] of callers.entries()) {
        const mulaw = await callerSpeech(
          app,
          CALLER_LINES[(round + i) % CALLER_LINES.length]!,
          round * 31 + i,
        );
        const pcm = decodeMulaw(mulaw);
        let last = pcm.length - 1;
        while (last > 0 && Math.abs(pcm[last]!) < 1000) last--;
        const session = relay.sessions.get(c.callSid)!;
        const prompts = session.prompts.length;
        const sttBefore = stt.requests.length;
        c.speak(mulaw);
        await until(() => c.onsetSentAt !== undefined, 5000);
        const speechEnd = c.onsetSentAt! + (last / 8000) * 1000;
        if (!(await until(() => session.prompts.length > prompts, 15_000))) continue;
        const request = stt.requests.slice(sttBefore).find((r) => r.wav);
        const promptAt = session.prompts.at(-1)!.at;
        toPrompt.push(promptAt - speechEnd);
        if (request) {
          toStt.push(request.receivedAt - speechEnd);
          sttRoundTrip.push(promptAt - request.receivedAt);
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    }

    // 3. The heard text at a cut, against the audio.
    const heard = await heardTextError(async (text) => {
      const s = await app.client.stream({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' });
      let bytes = 0;
      for await (const chunk of s) bytes += chunk.byteLength;
      return { audioMs: bytes / 48, alignment: s.alignment };
    });

    printTable(
      `Relay: ${calls} calls, tokens at ${1000 / TOKEN_GAP_MS} per second, ${clauseToAudio.length} answers`,
      ['measure', 'p50 ms', 'p95 ms', 'target'],
      [
        [
          'first clause complete → first audio at the gateway',
          fmt(median(clauseToAudio), 1),
          fmt(percentile(clauseToAudio, 95), 1),
          '≤ speech first byte + 20',
        ],
        [
          "the speech service's first byte for that clause",
          fmt(median(floor), 1),
          fmt(percentile(floor, 95), 1),
          '',
        ],
        [
          'added by voxbridge (the difference, per answer)',
          fmt(median(added), 1),
          fmt(percentile(added, 95), 1),
          '≤ 20',
        ],
        [
          `end of speech → STT request sent, less end-of-turn (${END_OF_TURN_MS} ms)`,
          fmt(median(toStt) - END_OF_TURN_MS, 1),
          fmt(percentile(toStt, 95) - END_OF_TURN_MS, 1),
          '≤ 10',
        ],
        [
          'STT request → prompt at the app (the STT round trip)',
          fmt(median(sttRoundTrip), 1),
          fmt(percentile(sttRoundTrip, 95), 1),
          '',
        ],
        ['end of speech → prompt at the app', fmt(median(toPrompt), 1), fmt(percentile(toPrompt, 95), 1), ''],
      ],
    );
    printTable(
      `Relay: heard text at ${heard.cuts} random cuts of four answers (characters off the audio's position)`,
      ['heard text from', 'mean', 'p50', 'p95', 'max'],
      [
        ["the service's character timings", ...errorRow(heard.timed)],
        ['the estimate (no timings)', ...errorRow(heard.estimate)],
      ],
    );
  } finally {
    for (const c of callers) c.close();
    await bench.close();
    await relay.close();
    await stt.close();
  }
}

function errorRow(errors: number[]): string[] {
  const mean = errors.reduce((a, b) => a + b, 0) / Math.max(1, errors.length);
  return [fmt(mean, 1), fmt(median(errors), 1), fmt(percentile(errors, 95), 1), fmt(Math.max(...errors), 1)];
}
