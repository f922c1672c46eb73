/**
 * Barge-in on lines that echo the bot, end to end: 18 Twilio-protocol calls at once, one per line
 * (echo paths from 40 to 300 ms and 6 to 30 dB of echo return loss, and lines without echo; no line
 * noise, 20 and 10 dB SNR against the caller's −20 dBFS speech; all through mu-law). Each caller's side
 * plays what it receives as a gateway does (each message after the one before, a clear drops the rest)
 * and sends back, every 20 ms on its own clock, the echo of what played plus noise plus its speech.
 *
 * First the bot talks to callers who only echo it (`ECHO_SECONDS` each): every clear is a false
 * barge-in. Then, round after round, each caller talks over the bot 1.5–3 s into a reply: onset (the
 * frame carrying the speech onset leaves) → the clear arriving, or missed when none comes within 2 s.
 * Then a call's first seconds, while its echo path is being found: `FIRST_CALLS` fresh calls per line,
 * one after another, each caller talking over the bot's first words 0.3–2.7 s into the call (onset →
 * clear, misses, and calls cut before the caller spoke).
 * The same run with `calls.bargeIn.echo: false` (the 400 ms rule alone) is the baseline.
 */
import WebSocket from 'ws';
import { decodeMulaw } from '../src/audio/g711.js';
import {
  parseServerMessage,
  TwilioCallerMessages,
  type TwilioCallIds,
} from '../src/protocols/twilio-caller.js';
import { resampleWhole } from '../src/audio/resampler.js';
import { espeakSpeech } from '../testkit/audio.js';
import { EchoingCaller, atLevel, type EchoPath, ECHO_PATHS, LINE_NOISES_DBFS } from '../testkit/echo-line.js';
import { speechBounds, UTTERANCES, VOICES } from '../testkit/vad-audio.js';
import { startBenchApp, type BenchApp } from './app.js';
import { fmt, percentile, printTable } from './stats.js';

const RATE = 8000;
const ECHO_SECONDS = Number(process.env['ECHO_SECONDS'] ?? 60);
const ROUNDS = Number(process.env['ROUNDS'] ?? 8);
const FIRST_CALLS = Number(process.env['FIRST_CALLS'] ?? 6);
/** A first-seconds call: the caller's onset this far into the bot's first words (ms), spread over the calls. */
const FIRST_ONSET_FROM_MS = 300;
const FIRST_ONSET_TO_MS = 2700;
const REPLY =
  'Thank you for waiting. I will now read you the full terms of your booking, so please listen carefully. '.repeat(
    30,
  );

interface Line {
  path: EchoPath | undefined;
  noiseDbfs: number | undefined;
}

/** The caller's side of one line: a Twilio gateway (the caller's messages as the CLI's) echoing the bot. */
class EchoCaller {
  readonly ids: TwilioCallIds;
  private readonly messages: TwilioCallerMessages;
  private readonly ws: WebSocket;
  private echoing: EchoingCaller | undefined;
  /** performance.now() of each clear received. */
  readonly clears: number[] = [];
  /** ms of audio received. */
  receivedMs = 0;

  constructor(
    url: string,
    private readonly index: number,
    readonly spec: Line,
  ) {
    this.ids = {
      callSid: `CA${String(index).padStart(32, '0')}`,
      streamSid: `MZ${String(index).padStart(32, '0')}`,
    };
    this.messages = new TwilioCallerMessages(this.ids, {});
    this.ws = new WebSocket(url);
    this.ws.on('message', (data: Buffer) => this.onMessage(data));
  }

  get callSid(): string {
    return this.ids.callSid;
  }

  async start(): Promise<void> {
    await new Promise((r) => this.ws.once('open', r));
    for (const m of this.messages.start()) this.send(m);
    this.echoing = new EchoingCaller(
      {
        sampleRate: RATE,
        ...(this.spec.path ?? { delayMs: 0, erlDb: 200 }),
        noiseDbfs: this.spec.noiseDbfs ?? -90,
        seed: this.index + 1,
      },
      (frame) => this.send(this.messages.media(frame).message),
    );
  }

  /** Starts talking: `samples` whose speech begins at sample `onset`. */
  talk(samples: Int16Array, onset: number): void {
    this.echoing!.talk(samples, onset);
  }

  get talking(): boolean {
    return this.echoing!.talking;
  }

  get onsetSentAt(): number | undefined {
    return this.echoing!.onsetSentAt;
  }

  get onsetFrameEndMs(): number | undefined {
    return this.echoing!.onsetFrameEndMs;
  }

  close(): void {
    this.echoing?.stop();
    this.ws.close();
  }

  private onMessage(data: Buffer): void {
    const now = performance.now();
    const m = parseServerMessage(data.toString('utf8'));
    const played = this.echoing?.played;
    if (!m || !played) return;
    if (m.type === 'media') {
      const audio = decodeMulaw(m.payload);
      this.receivedMs += audio.length / 8;
      played.media(audio, now);
    } else if (m.type === 'clear') {
      this.clears.push(now);
      played.clear(now);
    } else {
      const wait = played.playedToMs - now;
      const back = (): void => this.send(this.messages.mark(m.name));
      if (wait <= 0) back();
      else setTimeout(back, wait);
    }
  }

  private send(m: object): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }
}

interface LineResult {
  line: Line;
  falseBargeIns: number;
  /** Those within the bot's first 3 s on the call, while its echo path is being found. */
  earlyFalseBargeIns: number;
  echoMinutes: number;
  onsetToClearMs: number[];
  /**
   * Of each caught onset: the app's decision after the frame carrying it went out (on the inbound
   * timeline: the speech the detector needed), and the rest up to the clear (queues, the wire).
   */
  decidedAfterMs: number[];
  decisionToClearMs: number[];
  missed: number;
  /** A call's first seconds (fresh calls): onset → clear, misses, and calls cut before the caller spoke. */
  first: { onsetToClearMs: number[]; missed: number; cutBefore: number; calls: number };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function say(bench: BenchApp, callSid: string, text: string): Promise<void> {
  const res = await fetch(`${bench.app.url}/calls/${callSid}/say`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text, wait: false }),
  });
  await res.arrayBuffer();
}

async function interrupt(bench: BenchApp, callSid: string): Promise<void> {
  await (await fetch(`${bench.app.url}/calls/${callSid}/interrupt`, { method: 'POST' })).arrayBuffer();
}

async function runLines(
  echo: boolean,
  lines: Line[],
  speech: Array<{ samples: Int16Array; onset: number }>,
): Promise<LineResult[]> {
  const bench = await startBenchApp(`echo-${echo}`, { calls: { defaultFlow: null, bargeIn: { echo } } });
  const url = `${bench.app.url.replace('http:', 'ws:')}/media/twilio`;
  const callers = lines.map((line, i) => new EchoCaller(url, i, line));
  const decisions = new Map<string, number[]>();
  bench.app.calls.onCall((call) =>
    call.on('event', (e) => {
      if (e.type !== 'barge-in') return;
      const list = decisions.get(e.callId) ?? [];
      list.push(e.detectedMs);
      decisions.set(e.callId, list);
    }),
  );
  try {
    await Promise.all(callers.map((c) => c.start()));
    const deadline = performance.now() + 5000;
    while (bench.app.calls.list().filter((c) => c.state.status === 'active').length < callers.length) {
      if (performance.now() > deadline) throw new Error('calls did not start');
      await sleep(20);
    }
    return await Promise.all(
      callers.map(async (caller, ci): Promise<LineResult> => {
        // The bot talks to a caller who only echoes it; after a false barge-in it is asked again.
        await say(bench, caller.callSid, REPLY);
        const echoStart = performance.now();
        const echoEnd = echoStart + ECHO_SECONDS * 1000;
        let seen = 0;
        let falseBargeIns = 0;
        let earlyFalseBargeIns = 0;
        while (performance.now() < echoEnd) {
          await sleep(200);
          if (caller.clears.length > seen) {
            falseBargeIns += caller.clears.length - seen;
            earlyFalseBargeIns += caller.clears.slice(seen).filter((at) => at < echoStart + 3000).length;
            // A false barge-in may be taken back (resumed); else the bot is asked again. The clear of
            // that interrupt is not a barge-in.
            await sleep(2500);
            await interrupt(bench, caller.callSid);
            await sleep(100);
            seen = caller.clears.length;
            await say(bench, caller.callSid, REPLY);
          }
        }
        await interrupt(bench, caller.callSid);
        await sleep(500);
        const result: LineResult = {
          line: caller.spec,
          falseBargeIns,
          earlyFalseBargeIns,
          echoMinutes: ECHO_SECONDS / 60,
          onsetToClearMs: [],
          decidedAfterMs: [],
          decisionToClearMs: [],
          missed: 0,
          first: { onsetToClearMs: [], missed: 0, cutBefore: 0, calls: 0 },
        };
        for (let round = 0; round < ROUNDS; round++) {
          await say(bench, caller.callSid, REPLY);
          const heardBefore = caller.receivedMs;
          const waitMs = 1500 + ((round * 7 + ci * 3) % 16) * 100;
          const heardBy = performance.now() + 10_000;
          while (caller.receivedMs - heardBefore < waitMs && performance.now() < heardBy) await sleep(10);
          const clearsBefore = caller.clears.length;
          const utterance = speech[(round + ci) % speech.length]!;
          caller.talk(utterance.samples, utterance.onset);
          const until = performance.now() + 2000 + (utterance.onset / RATE) * 1000;
          while (caller.clears.length === clearsBefore && performance.now() < until) await sleep(2);
          const clearAt = caller.clears[clearsBefore];
          const sentAt = caller.onsetSentAt;
          if (clearAt !== undefined && sentAt !== undefined && clearAt >= sentAt) {
            result.onsetToClearMs.push(clearAt - sentAt);
            // The decision behind the clear: the last one made before the clear came, on the inbound
            // timeline (where the frame carrying the onset ends is when it went out).
            const frameEnd = caller.onsetFrameEndMs!;
            const clearInboundMs = frameEnd + (clearAt - sentAt);
            const decided = decisions
              .get(caller.callSid)
              ?.filter((d) => d >= frameEnd - 1000 && d <= clearInboundMs)
              .at(-1);
            if (decided !== undefined) {
              result.decidedAfterMs.push(decided - frameEnd);
              result.decisionToClearMs.push(clearAt - sentAt - (decided - frameEnd));
            }
          } else result.missed++;
          while (caller.talking) await sleep(20);
          await sleep(1500);
          await interrupt(bench, caller.callSid);
          await sleep(300);
        }
        for (let k = 0; k < FIRST_CALLS; k++) {
          const onsetAtMs =
            FIRST_ONSET_FROM_MS +
            ((FIRST_ONSET_TO_MS - FIRST_ONSET_FROM_MS) * ((k * 5 + ci) % FIRST_CALLS)) /
              Math.max(1, FIRST_CALLS - 1);
          await firstSeconds(
            bench,
            url,
            caller.spec,
            1000 + ci * 100 + k,
            onsetAtMs,
            speech[(k + ci) % speech.length]!,
            result.first,
          );
        }
        return result;
      }),
    );
  } finally {
    for (const c of callers) c.close();
    await bench.close();
  }
}

/**
 * One fresh call on `line`: the bot starts its reply, and the caller talks `onsetAtMs` into it (as
 * heard: the audio received so far), before the echo path can be known. Counted into `into`.
 */
async function firstSeconds(
  bench: BenchApp,
  url: string,
  line: Line,
  index: number,
  onsetAtMs: number,
  utterance: { samples: Int16Array; onset: number },
  into: LineResult['first'],
): Promise<void> {
  const caller = new EchoCaller(url, index, line);
  try {
    await caller.start();
    const deadline = performance.now() + 5000;
    while (bench.app.calls.get(caller.callSid)?.state.status !== 'active') {
      if (performance.now() > deadline) throw new Error('a first-seconds call did not start');
      await sleep(10);
    }
    await say(bench, caller.callSid, REPLY);
    const heardBy = performance.now() + 10_000;
    // The caller's speech begins `onsetAtMs` into what they heard: they start talking that much
    // earlier by the utterance's own lead-in.
    const startAtMs = Math.max(0, onsetAtMs - (utterance.onset / RATE) * 1000);
    while (caller.receivedMs < startAtMs && performance.now() < heardBy) await sleep(5);
    into.calls++;
    if (caller.clears.length > 0) {
      into.cutBefore++;
      return;
    }
    caller.talk(utterance.samples, utterance.onset);
    const until = performance.now() + 2000 + (utterance.onset / RATE) * 1000;
    while (caller.clears.length === 0 && performance.now() < until) await sleep(2);
    const clearAt = caller.clears[0];
    const sentAt = caller.onsetSentAt;
    if (clearAt !== undefined && sentAt !== undefined && clearAt >= sentAt)
      into.onsetToClearMs.push(clearAt - sentAt);
    else if (clearAt !== undefined) into.cutBefore++;
    else into.missed++;
    while (caller.talking) await sleep(20);
  } finally {
    caller.close();
    await sleep(200);
  }
}

function lineName(line: Line): string {
  const path = line.path ? `${line.path.delayMs} ms, ${line.path.erlDb} dB` : 'no echo';
  const snr = line.noiseDbfs === undefined ? 'no noise' : `${-20 - line.noiseDbfs} dB SNR`;
  return `${path}, ${snr}`;
}

export async function benchEchoLines(): Promise<void> {
  const speech = await Promise.all(
    UTTERANCES.map(async (text, i) => {
      const [voice, pitch, rate] = VOICES[i % VOICES.length]!;
      const samples = atLevel(resampleWhole(await espeakSpeech(text, voice, pitch, rate), 22_050, RATE), -20);
      return { samples, onset: speechBounds(samples).onset };
    }),
  );
  const all: Line[] = LINE_NOISES_DBFS.flatMap((noiseDbfs) =>
    ECHO_PATHS.map((path) => ({ path, noiseDbfs })),
  );
  const only = process.env['ECHO_LINES'];
  const lines = only ? only.split(',').map((i) => all[Number(i)]!) : all;
  const withEcho = await runLines(true, lines, speech);
  const baseline = await runLines(false, lines, speech);
  const groups: Array<[string, (r: LineResult) => boolean]> = [
    ['lines with echo', (r) => r.line.path !== undefined],
    ['lines without echo', (r) => r.line.path === undefined],
    ...LINE_NOISES_DBFS.map((n): [string, (r: LineResult) => boolean] => [
      `  with echo, ${n === undefined ? 'no noise' : `${-20 - n} dB SNR`}`,
      (r) => r.line.path !== undefined && r.line.noiseDbfs === n,
    ]),
  ];
  const row = (name: string, rs: LineResult[]): string[] => {
    const clears = rs.flatMap((r) => r.onsetToClearMs);
    const decided = rs.flatMap((r) => r.decidedAfterMs);
    const rest = rs.flatMap((r) => r.decisionToClearMs);
    const onsets = clears.length + rs.reduce((n, r) => n + r.missed, 0);
    const minutes = rs.reduce((n, r) => n + r.echoMinutes, 0);
    const falses = rs.reduce((n, r) => n + r.falseBargeIns, 0);
    const early = rs.reduce((n, r) => n + r.earlyFalseBargeIns, 0);
    return [
      name,
      fmt(percentile(clears, 50), 0),
      fmt(percentile(clears, 95), 0),
      `${fmt((100 * clears.length) / Math.max(1, onsets), 1)} % of ${onsets}`,
      `${fmt(percentile(decided, 50), 0)} / ${fmt(percentile(decided, 95), 0)}`,
      `${fmt(percentile(rest, 50), 0)} / ${fmt(percentile(rest, 95), 0)}`,
      `${falses} in ${fmt(minutes, 0)} min (${fmt((falses * 10) / Math.max(1e-9, minutes), 2)} / 10 min)`,
      String(early),
    ];
  };
  printTable(
    `Barge-in on lines that echo the bot (${lines.length} Twilio calls at once, ${ECHO_SECONDS} s of echo each, ${ROUNDS} talk-overs each)`,
    [
      'lines',
      'onset → clear p50 (ms)',
      'p95 (ms)',
      'onsets caught',
      'decided after onset p50 / p95',
      'decision → clear p50 / p95',
      'false barge-ins on echo alone',
      'of which in the first 3 s',
    ],
    groups.flatMap(([name, match]) => [
      row(`${name}: echo-aware`, withEcho.filter(match)),
      row(`${name}: 400 ms rule (echo: false)`, baseline.filter(match)),
    ]),
  );
  const firstRow = (name: string, rs: LineResult[]): string[] => {
    const clears = rs.flatMap((r) => r.first.onsetToClearMs);
    const calls = rs.reduce((n, r) => n + r.first.calls, 0);
    const missed = rs.reduce((n, r) => n + r.first.missed, 0);
    const cut = rs.reduce((n, r) => n + r.first.cutBefore, 0);
    return [
      name,
      fmt(percentile(clears, 50), 0),
      fmt(percentile(clears, 95), 0),
      `${clears.length} of ${calls}`,
      String(missed),
      String(cut),
    ];
  };
  printTable(
    `A call's first seconds (${FIRST_CALLS} fresh calls per line, the caller's onset ${FIRST_ONSET_FROM_MS / 1000}–${FIRST_ONSET_TO_MS / 1000} s into the bot's first words)`,
    [
      'lines',
      'onset → clear p50 (ms)',
      'p95 (ms)',
      'caught',
      'missed (no clear in 2 s)',
      'cut before the caller spoke',
    ],
    groups.flatMap(([name, match]) => [
      firstRow(`${name}: echo-aware`, withEcho.filter(match)),
      firstRow(`${name}: 400 ms rule (echo: false)`, baseline.filter(match)),
    ]),
  );
  printTable(
    'Per line, echo-aware',
    [
      'line',
      'onset → clear p50 (ms)',
      'p95 (ms)',
      'onsets caught',
      'decided after p50 / p95',
      'decision → clear p50 / p95',
      'false barge-ins',
      'in the first 3 s',
    ],
    withEcho.map((r) => row(lineName(r.line), [r])),
  );
}
