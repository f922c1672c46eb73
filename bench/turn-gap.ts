/**
 * The whole turn gap on a relay call (issue 45, part 5): the caller's last word → the first audio of
 * the app's answer at the gateway, end to end on Twilio-protocol calls, for the pause corpus's turns
 * (testkit/turn-corpus.ts, two eSpeak voices, on a μ-law line at 30 dB SNR) said at real time, an app
 * that answers every prompt at once (one token, a text never said before), and the local speech
 * service. Two set-ups:
 *
 * - realtime: `stt.mode: realtime` against the fake realtime transcriber (testkit/fake-realtime-stt.ts)
 *   writing each word once its sound has been sent whole, 150 ms late (Scribe v2 Realtime's advertised
 *   latency), a partial every 100 ms of audio; turns end by the endpointing rule.
 * - batch: today's, a turn ends after 700 ms of silence and goes to the fake batch service, which
 *   answers 150 ms after the request (less than a real batch round trip, which uploads the whole turn).
 *
 * Per set-up: premature cut-offs (a turn prompted in two or more pieces), the gap and its parts (from
 * the call's `relay.turn` events: endpointing, speech-to-text, app, the speech service's first byte,
 * the first frame), and, for complete answers, the end of turn after the last word.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocketServer, type WebSocket } from 'ws';
import { encodeMulaw } from '../src/audio/g711.js';
import { rawText } from '../src/http/ws-data.js';
import { FakeRealtimeStt, type FakeRealtimeSegment } from '../testkit/fake-realtime-stt.js';
import { FakeStt, FAKE_STT_KEY } from '../testkit/fake-stt.js';
import { corpusTurn, espeakVoice, TURN_SCRIPTS, type CorpusTurn } from '../testkit/turn-corpus.js';
import { VOICES } from '../testkit/vad-audio.js';
import { startBenchApp } from './app.js';
import { Caller, until } from './barge-in.js';
import { fmt, percentile, printTable } from './stats.js';

const STT_LATENCY_MS = 150;
const CALLS = 4;
const BYTES_PER_MS = 8;

interface Prompt {
  readonly text: string;
  readonly at: number;
}

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'pu', 'ri', 'so', 'tu', 'va', 'ze'];
/** A name no answer had before: `n`'s digits as syllables ("Kalomi"). */
function nameOf(n: number): string {
  const name = [...String(n + 100)].map((d) => SYLLABLES[Number(d)]!).join('');
  return name[0]!.toUpperCase() + name.slice(1);
}

/** The app: answers each turn's prompt (`last: true`) at once, with a text never said before. */
class AnsweringApp {
  readonly prompts = new Map<string, Prompt[]>();
  private answered = 0;
  private constructor(readonly server: WebSocketServer) {
    server.on('connection', (socket: WebSocket) => {
      let callSid = '';
      socket.on('message', (data) => {
        const m = JSON.parse(rawText(data)) as Record<string, unknown>;
        if (m['type'] === 'setup') {
          callSid = String(m['callSid']);
          this.prompts.set(callSid, []);
        } else if (m['type'] === 'prompt' && m['last'] !== false) {
          this.prompts.get(callSid)?.push({ text: String(m['voicePrompt']), at: performance.now() });
          const n = ++this.answered;
          // Its first word never said before: none of the answer comes from the phrase cache.
          socket.send(
            JSON.stringify({ type: 'text', token: `${nameOf(n)}, your request is noted.`, last: true }),
          );
        }
      });
    });
  }

  static async start(): Promise<AnsweringApp> {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await once(server, 'listening');
    return new AnsweringApp(server);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}/relay`;
  }

  async close(): Promise<void> {
    for (const c of this.server.clients) c.terminate();
    await new Promise((r) => this.server.close(r));
  }
}

/** Where `part`'s first bytes are in `whole`; -1 when they are not. */
function locate(whole: Uint8Array, part: Uint8Array): number {
  const probe = part.subarray(0, Math.min(64, part.length));
  outer: for (let i = 0; i + probe.length <= whole.length; i++) {
    for (let k = 0; k < probe.length; k++) if (whole[i + k] !== probe[k]) continue outer;
    return i;
  }
  return -1;
}

/** A turn on its way: its μ-law, its words. */
interface Said {
  readonly turn: CorpusTurn;
  readonly mulaw: Uint8Array;
}

/**
 * The realtime transcriber's script: a session's audio is found in the turn being said on one of the
 * calls, and its text is the words whose sound it holds whole (the whole turn at the commit).
 */
function transcriber(current: () => Iterable<Said>): (s: FakeRealtimeSegment) => string {
  const found = new Map<number, { said: Said; from: number }>();
  return (segment) => {
    let at = found.get(segment.sessionIndex);
    if (!at)
      for (const said of current()) {
        const from = locate(said.mulaw, segment.audio);
        if (from >= 0) {
          at = { said, from };
          found.set(segment.sessionIndex, at);
          break;
        }
      }
    if (!at) return '';
    const reached = at.from + segment.audio.length;
    return at.said.turn.words
      .filter((w) => w.startMs * BYTES_PER_MS >= at.from && w.endMs * BYTES_PER_MS <= reached)
      .map((w) => w.text)
      .join(' ');
  };
}

interface TurnResult {
  readonly turn: CorpusTurn;
  readonly prompts: number;
  /** Last word → first audio of the answer at the gateway (ms); undefined when cut or unanswered. */
  readonly gapMs: number | undefined;
  /** The call's `relay.turn` event's parts. */
  readonly parts: Record<string, number> | undefined;
}

async function run(mode: 'realtime' | 'batch', turns: readonly CorpusTurn[]): Promise<TurnResult[]> {
  const app = await AnsweringApp.start();
  const current = new Map<Caller, Said>();
  const realtime = await FakeRealtimeStt.start({
    apiKey: FAKE_STT_KEY,
    latencyMs: STT_LATENCY_MS,
    partialEveryMs: 100,
    transcribe: transcriber(() => current.values()),
  });
  const batch = await FakeStt.start({
    transcribe: async () => {
      await sleep(STT_LATENCY_MS);
      return 'A question from the caller.';
    },
  });
  const bench = await startBenchApp(
    `turn-gap-${mode}`,
    {
      calls: { defaultFlow: 'agent' },
      stt: {
        baseUrl: batch.url,
        endOfTurnMs: 700,
        mode,
        realtime: { baseUrl: realtime.url },
      },
      relays: { r: { url: app.url } },
      flows: { agent: { start: 'talk', nodes: { talk: { type: 'relay', relay: 'r' } } } },
    },
    { STT_API_KEY: FAKE_STT_KEY },
  );
  const callers: Caller[] = [];
  const results: TurnResult[] = [];
  try {
    for (let i = 0; i < CALLS; i++) {
      const c = new Caller(`${bench.app.url.replace('http:', 'ws:')}/media/twilio`, 7700 + i);
      await c.start();
      callers.push(c);
    }
    if (!(await until(() => callers.every((c) => app.prompts.has(c.callSid)), 10_000)))
      throw new Error('relay sessions did not open');
    const queue = [...turns];
    await Promise.all(
      callers.map(async (c) => {
        const call = bench.app.calls.get(c.callSid)!;
        for (let turn = queue.shift(); turn; turn = queue.shift()) {
          const prompts = app.prompts.get(c.callSid)!;
          const promptsBefore = prompts.length;
          const seq = call.eventsAfter(0).at(-1)?.seq ?? 0;
          const mulaw = encodeMulaw(turn.samples);
          current.set(c, { turn, mulaw });
          c.speak(mulaw);
          await until(() => c.onsetSentAt !== undefined, 5000);
          const lastWordAt = c.onsetSentAt! + turn.endMs;
          // The turn, then its answer, or the rule's ceiling and then some.
          await until(
            () => performance.now() > lastWordAt + 4000 && (c.mediaAt.at(-1) ?? 0) < performance.now() - 600,
            20_000,
          );
          const mine = prompts.slice(promptsBefore);
          const event = call.eventsAfter(seq).find((e) => e.type === 'relay.turn');
          const lastPrompt = mine.at(-1);
          const answerAt = lastPrompt && c.mediaAt.find((t) => t > lastPrompt.at);
          results.push({
            turn,
            prompts: mine.length,
            gapMs: mine.length === 1 && answerAt !== undefined ? answerAt - lastWordAt : undefined,
            parts:
              event && event.type === 'relay.turn'
                ? {
                    endpointing: event.endpointingMs,
                    stt: event.sttMs,
                    app: event.appMs,
                    firstByte: event.firstByteMs ?? Number.NaN,
                    firstFrame: event.firstFrameMs - (event.firstByteMs ?? 0),
                  }
                : undefined,
          });
          current.delete(c);
        }
      }),
    );
  } finally {
    for (const c of callers) c.close();
    await bench.close();
    await app.close();
    await realtime.close();
    await batch.close();
  }
  return results;
}

const p = (values: readonly number[], q: number): string => fmt(percentile(values, q), 0);

function rows(mode: string, results: readonly TurnResult[]): string[][] {
  const cut = results.filter((r) => r.prompts > 1).length;
  const gaps = results.flatMap((r) => (r.gapMs === undefined ? [] : [r.gapMs]));
  const part = (k: string, rs = results): number[] =>
    rs.flatMap((r) => (r.parts && Number.isFinite(r.parts[k]) ? [r.parts[k]!] : []));
  const complete = results.filter((r) => r.turn.kind === 'short-answer' || r.turn.kind === 'sentence');
  const completeGaps = complete.flatMap((r) => (r.gapMs === undefined ? [] : [r.gapMs]));
  return [
    [
      mode,
      `${results.length}`,
      `${fmt((100 * cut) / results.length)} % (${cut})`,
      `${p(gaps, 50)} / ${p(gaps, 95)}`,
      `${p(completeGaps, 50)} / ${p(completeGaps, 95)}`,
      `${p(part('endpointing', complete), 50)} / ${p(part('endpointing', complete), 95)}`,
      `${p(part('endpointing'), 50)} / ${p(part('endpointing'), 95)}`,
      fmt(percentile(part('stt'), 50), 0),
      fmt(percentile(part('app'), 50), 1),
      fmt(percentile(part('firstByte'), 50), 1),
      fmt(percentile(part('firstFrame'), 50), 1),
    ],
  ];
}

export async function benchTurnGap(): Promise<void> {
  const voices = [espeakVoice(VOICES[0]!), espeakVoice(VOICES[2]!)];
  const turns: CorpusTurn[] = [];
  let seed = 1;
  for (const voice of voices)
    for (const script of TURN_SCRIPTS)
      turns.push(await corpusTurn(script, voice, { seed: seed++, snrDb: 30, leadMs: 1000, tailMs: 500 }));
  const realtime = await run('realtime', turns);
  const batch = await run('batch', turns);
  printTable(
    `Turn gap on relay calls: ${turns.length} pause-corpus turns (two eSpeak voices, μ-law, 30 dB SNR), ${CALLS} calls at once, an app that answers at once; speech-to-text ${STT_LATENCY_MS} ms late`,
    [
      'stt',
      'turns',
      'premature cut-offs',
      'gap p50 / p95 ms',
      'gap, complete answers',
      'end of turn, complete answers p50 / p95',
      'end of turn, all p50 / p95',
      'stt p50',
      'app p50',
      'first byte p50',
      'first frame p50',
    ],
    [...rows('realtime + endpointing', realtime), ...rows('batch + fixed 700 ms', batch)],
  );
  console.log(
    "gap: the last word to the first media message of the answer at the gateway (turns prompted whole); end of turn: the caller's silence when the turn was decided over (the call's relay.turn event); targets: complete answers ≤ 350 ms, gap ≤ 600 ms p50",
  );
}
