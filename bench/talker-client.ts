// Over 450 lines: the whole gateway side of the talkers benchmark, in its own process.
/**
 * The gateway side of the talkers benchmark (bench/talkers.ts), in its own process: N Twilio-protocol
 * calls whose callers are on real lines. Every caller sends 20 ms of audio every 20 ms (each call at
 * its own phase, stamped with Twilio's timestamps): line noise at the line's level, the bot's echo on
 * half of the lines (testkit's `EchoLine`: each line its own delay and ERL), and, when told to, the
 * caller's own speech over the bot. The echo is of what the caller hears: the mu-law this gateway
 * received, decoded and played on its arithmetic playout clock (each frame after the one before, or
 * at once when the buffer is dry; a `clear` cuts it at that instant). Marks come back when the audio
 * before them has played, and every pending one on a clear, as Twilio does.
 *
 * Measured here, on this process's clock: each frame's lateness against the playout clock, when each
 * speech onset's packet was sent and whether the bot was audible then, when each `clear` arrived, how
 * late the callers' frames left (this process's own lag), and how much bot audio each kind of line heard.
 *
 * IPC: {cmd: 'open', url, calls, seed} → {type: 'ready', callSids, lines};
 * {cmd: 'round', promptMs, talkFraction, secondTalkFraction, seed} → {type: 'armed'};
 * {cmd: 'cpu'} → {type: 'cpu', cpu}; {cmd: 'report'} → {type: 'report', …} (and a fresh start);
 * {cmd: 'close'}.
 */
import WebSocket from 'ws';
import { decodeMulaw, encodeMulaw } from '../src/audio/g711.js';
import { resampleWhole } from '../src/audio/resampler.js';
import { espeakSpeech } from '../testkit/audio.js';
import { atLevel, EchoLine } from '../testkit/echo-line.js';
import { seeded } from '../testkit/random.js';
import { speechBounds, UTTERANCES, VOICES } from '../testkit/vad-audio.js';
import { percentile } from './stats.js';
import { FRAME_MS } from '../src/audio/framer.js';

const SAMPLE_RATE = 8000;
const FRAME_SAMPLES = 160;
const SAMPLES_PER_MS = SAMPLE_RATE / 1000;
const ESPEAK_RATE = 22_050;
/** A frame arriving after the buffer has been dry this long starts a new run of speech, not an underrun. */
const NEW_RUN_DRY_MS = 150;
/** How often the send loop wakes: each call's frames leave within this of their capture's end. */
const TICK_MS = 5;
/** The callers' speech level, RMS over its loud part (dBFS). */
const SPEECH_DBFS = -20;
/** Line noise, each line its own level in this range (dBFS RMS). */
const NOISE_DBFS: readonly [number, number] = [-50, -40];
/** Echo paths of the lines that echo. */
const ECHO_DELAY_MS: readonly [number, number] = [40, 300];
const ECHO_ERL_DB: readonly [number, number] = [6, 30];
/** A talk starts this long after the prompt began at the earliest, and this long before its end at the latest. */
const TALK_AFTER_START_MS = 300;
const TALK_BEFORE_END_MS = 1500;
/** A second talk in the same prompt follows the first's end by this much at least (ms) and up to 1 s more. */
const SECOND_TALK_PAUSE_MS = 500;

export interface LineConfig {
  echo: boolean;
  delayMs: number;
  erlDb: number;
  noiseDbfs: number;
}

export interface TalkRecord {
  call: number;
  echo: boolean;
  /** performance.now() (this process) when the packet carrying the speech onset was sent. */
  sentAt: number;
  /** …and when the packet carrying its last speech left (or the talk's end was cut short by a report). */
  endAt: number;
  /** The onset packet's Twilio timestamp: the onset on the inbound timeline the app sees. */
  inboundMs: number;
  utterance: number;
}

export interface ClearRecord {
  call: number;
  /** performance.now() (this process) when it arrived. */
  at: number;
  /** The same moment on the call's inbound timeline (its Twilio timestamps), to match the app's barge-in. */
  inboundMs: number;
  /** The caller heard the bot when it came (else it cut nothing). */
  audible: boolean;
}

export interface TalkerReport {
  type: 'report';
  /** Frame lateness against the playout clock inside runs of speech (ms; negative = early). */
  lateness: number[];
  /** Frames that came more than a frame late inside a run: the caller heard a gap. */
  gaps: number;
  frames: number;
  violations: number;
  /** Talks begun while the bot was audible at the caller. */
  talks: TalkRecord[];
  /** Talks due when the bot was already silent at the caller (cut short before): not made. */
  skippedTalks: number;
  clears: ClearRecord[];
  /** Bot audio heard (ms), on lines with and without echo. */
  botAudioMs: { echo: number; noEcho: number };
  /**
   * How late the callers' frames left after their 20 ms of capture ended (ms): this process's own lag,
   * since the round began.
   */
  sendLag: { p50: number; p99: number; max: number };
  cpu: NodeJS.CpuUsage;
  rss: number;
}

/** Audio received by a line with echo, decoded, and when it plays there. */
interface Segment {
  start: number;
  end: number;
  pcm: Int16Array;
}

interface PlannedTalk {
  /** Offset from the prompt's start at this caller (ms). */
  offsetMs: number;
  utterance: number;
}

interface CallState {
  index: number;
  ws: WebSocket;
  callSid: string;
  streamSid: string;
  line: LineConfig;
  echoLine: EchoLine;
  /** When the caller's frame 0 began (performance.now() ms): each call at its own phase. */
  t0: number;
  /** Frames sent. */
  sent: number;
  seq: number;
  /** When the audio buffered at this fake gateway runs out (performance.now() ms). */
  playheadEnd: number;
  /** What is played or queued to play, in order, on lines with echo; cut at a clear. */
  segments: Segment[];
  /** A clear cut the playout: the next frame begins a new run, whenever it comes. */
  cut: boolean;
  /** Marks waiting for their audio to play. */
  markTimers: Map<NodeJS.Timeout, string>;
  violations: number;
  /** Armed for a round: the next media starts the prompt. */
  armed: boolean;
  promptStart: number | undefined;
  planned: PlannedTalk[];
  /** The talk being sent: its samples and how far. */
  talk: { samples: Int16Array; at: number; record: TalkRecord } | undefined;
}

const calls: CallState[] = [];
let utterances: Int16Array[] = [];
let lateness: number[] = [];
let sendLag: number[] = [];
let gaps = 0;
let frames = 0;
let talks: TalkRecord[] = [];
let skippedTalks = 0;
let clears: TalkerReport['clears'] = [];
const botAudioMs = { echo: 0, noEcho: 0 };
let ticker: NodeJS.Timeout | undefined;
let round: { promptMs: number; talkFraction: number; secondTalkFraction: number } | undefined;
let roundRandom: () => number = seeded(1);

function send(c: CallState, text: string): void {
  if (c.ws.readyState === WebSocket.OPEN) c.ws.send(text);
}

/** The caller's utterances: eSpeak voices at the speech level, starting at their onset. */
async function makeUtterances(): Promise<Int16Array[]> {
  const out: Int16Array[] = [];
  for (let i = 0; i < UTTERANCES.length; i++) {
    const voice = VOICES[i % VOICES.length]!;
    const raw = resampleWhole(
      await espeakSpeech(UTTERANCES[i]!, voice[0], voice[1], voice[2]),
      ESPEAK_RATE,
      SAMPLE_RATE,
    );
    const speech = atLevel(raw, SPEECH_DBFS);
    const { onset, end } = speechBounds(speech);
    out.push(speech.slice(onset, end));
  }
  return out;
}

function sendMark(c: CallState, name: string): void {
  send(
    c,
    `{"event":"mark","sequenceNumber":"${++c.seq}","streamSid":"${c.streamSid}","mark":{"name":${JSON.stringify(name)}}}`,
  );
}

function onMessage(c: CallState, data: Buffer): void {
  const now = performance.now();
  const msg = JSON.parse(data.toString('utf8')) as {
    event: string;
    streamSid?: string;
    media?: { payload: string };
    mark?: { name: string };
  };
  if (msg.streamSid !== c.streamSid) c.violations++;
  if (msg.event === 'media') {
    const bytes = Buffer.from(msg.media!.payload, 'base64');
    if (bytes.length % FRAME_SAMPLES !== 0) c.violations++;
    const durationMs = bytes.length / SAMPLES_PER_MS;
    frames += bytes.length / FRAME_SAMPLES;
    const dryForMs = now - c.playheadEnd;
    if (dryForMs < NEW_RUN_DRY_MS && !c.cut) {
      // Inside a run: due when the audio before it runs out; positive = late (the listener heard a gap).
      lateness.push(Math.round(dryForMs * 100) / 100);
      if (dryForMs > FRAME_MS) gaps++;
    }
    c.cut = false;
    const start = Math.max(now, c.playheadEnd);
    c.playheadEnd = start + durationMs;
    if (c.line.echo) {
      c.segments.push({ start, end: c.playheadEnd, pcm: decodeMulaw(bytes) });
      botAudioMs.echo += durationMs;
    } else botAudioMs.noEcho += durationMs;
    if (c.armed) {
      c.armed = false;
      c.promptStart = start;
      plan(c);
    }
  } else if (msg.event === 'mark') {
    const name = msg.mark!.name;
    const wait = c.playheadEnd - now;
    if (wait <= 0) sendMark(c, name);
    else {
      const timer = setTimeout(() => {
        c.markTimers.delete(timer);
        sendMark(c, name);
      }, wait);
      c.markTimers.set(timer, name);
    }
  } else if (msg.event === 'clear') {
    clears.push({ call: c.index, at: now, inboundMs: now - c.t0, audible: c.playheadEnd > now });
    c.cut = true;
    // What plays now stops here; what was queued is thrown away; every pending mark comes back.
    c.playheadEnd = Math.min(c.playheadEnd, now);
    c.segments = c.segments.filter((s) => s.start < now);
    for (const s of c.segments) s.end = Math.min(s.end, now);
    for (const [timer, name] of c.markTimers) {
      clearTimeout(timer);
      sendMark(c, name);
    }
    c.markTimers.clear();
  } else c.violations++;
}

/** This prompt's talks at this caller: a fraction of calls talk, some of them twice. */
function plan(c: CallState): void {
  if (!round || roundRandom() >= round.talkFraction) return;
  const latest = round.promptMs - TALK_BEFORE_END_MS;
  if (latest <= TALK_AFTER_START_MS) return;
  const first: PlannedTalk = {
    offsetMs: TALK_AFTER_START_MS + roundRandom() * (latest - TALK_AFTER_START_MS),
    utterance: Math.floor(roundRandom() * utterances.length),
  };
  c.planned.push(first);
  if (roundRandom() < round.secondTalkFraction) {
    const firstMs = utterances[first.utterance]!.length / SAMPLES_PER_MS;
    const offsetMs = first.offsetMs + firstMs + SECOND_TALK_PAUSE_MS + roundRandom() * 1000;
    if (offsetMs <= latest)
      c.planned.push({ offsetMs, utterance: Math.floor(roundRandom() * utterances.length) });
  }
}

/** The bot's audio that played at this caller during [from, to) (ms), at 8 kHz; undefined if none. */
function playedDuring(c: CallState, from: number): Int16Array | undefined {
  const to = from + FRAME_MS;
  let out: Int16Array | undefined;
  let drop = 0;
  for (const s of c.segments) {
    if (s.end <= from) {
      drop++;
      continue;
    }
    if (s.start >= to) break;
    const lo = Math.max(from, s.start);
    const hi = Math.min(to, s.end);
    const dst = Math.round((lo - from) * SAMPLES_PER_MS);
    const count = Math.min(FRAME_SAMPLES, Math.round((hi - from) * SAMPLES_PER_MS)) - dst;
    const src = Math.round((lo - s.start) * SAMPLES_PER_MS);
    if (count <= 0) continue;
    out ??= new Int16Array(FRAME_SAMPLES);
    out.set(s.pcm.subarray(src, Math.min(s.pcm.length, src + count)), dst);
  }
  if (drop > 0) c.segments.splice(0, drop);
  return out;
}

/** The caller's next frame of `from` (the 20 ms of capture that began then), sent at `now`. */
function sendFrame(c: CallState, from: number, now: number): void {
  const inboundMs = c.sent * FRAME_MS;
  let speech: Int16Array | undefined;
  if (!c.talk && c.promptStart !== undefined && c.planned.length > 0) {
    const next = c.planned[0]!;
    if (from >= c.promptStart + next.offsetMs) {
      c.planned.shift();
      // Only over the bot: a call it stopped talking to (cut short by a false barge-in) stays quiet.
      if (c.playheadEnd >= from + FRAME_MS) {
        const record: TalkRecord = {
          call: c.index,
          echo: c.line.echo,
          sentAt: now,
          endAt: now,
          inboundMs,
          utterance: next.utterance,
        };
        talks.push(record);
        c.talk = { samples: utterances[next.utterance]!, at: 0, record };
      } else skippedTalks++;
    }
  }
  if (c.talk) {
    const { samples, at } = c.talk;
    speech = new Int16Array(FRAME_SAMPLES);
    speech.set(samples.subarray(at, at + FRAME_SAMPLES));
    c.talk.record.endAt = now;
    c.talk.at += FRAME_SAMPLES;
    if (c.talk.at >= samples.length) c.talk = undefined;
  }
  const played = c.line.echo ? playedDuring(c, from) : undefined;
  const audio = c.echoLine.next(played, FRAME_SAMPLES, speech);
  const payload = Buffer.from(encodeMulaw(audio)).toString('base64');
  send(
    c,
    `{"event":"media","sequenceNumber":"${++c.seq}","media":{"track":"inbound","chunk":"${c.sent + 1}","timestamp":"${inboundMs}","payload":"${payload}"},"streamSid":"${c.streamSid}"}`,
  );
  c.sent++;
}

function tick(): void {
  const now = performance.now();
  for (const c of calls) {
    if (c.ws.readyState !== WebSocket.OPEN) continue;
    // Every frame whose 20 ms of capture has ended leaves now (several when this process was late).
    for (let from = c.t0 + c.sent * FRAME_MS; from + FRAME_MS <= now; from += FRAME_MS) {
      sendLag.push(now - (from + FRAME_MS));
      sendFrame(c, from, now);
    }
  }
}

async function open(url: string, count: number, seed: number): Promise<void> {
  utterances = await makeUtterances();
  const random = seeded(seed);
  const pending: Array<Promise<void>> = [];
  for (let i = 0; i < count; i++) {
    const echo = i % 2 === 0;
    const line: LineConfig = {
      echo,
      delayMs: Math.round(ECHO_DELAY_MS[0] + random() * (ECHO_DELAY_MS[1] - ECHO_DELAY_MS[0])),
      erlDb: Math.round(ECHO_ERL_DB[0] + random() * (ECHO_ERL_DB[1] - ECHO_ERL_DB[0])),
      noiseDbfs: Math.round((NOISE_DBFS[0] + random() * (NOISE_DBFS[1] - NOISE_DBFS[0])) * 10) / 10,
    };
    const c: CallState = {
      index: i,
      ws: new WebSocket(url),
      callSid: `CA${String(i).padStart(32, '0')}`,
      streamSid: `MZ${String(i).padStart(32, '0')}`,
      line,
      echoLine: new EchoLine({
        sampleRate: SAMPLE_RATE,
        delayMs: line.delayMs,
        erlDb: line.erlDb,
        noiseDbfs: line.noiseDbfs,
        mulaw: false,
        seed: seed * 100_003 + i,
      }),
      t0: 0,
      sent: 0,
      seq: 0,
      playheadEnd: Number.NEGATIVE_INFINITY,
      segments: [],
      cut: false,
      markTimers: new Map(),
      violations: 0,
      armed: false,
      promptStart: undefined,
      planned: [],
      talk: undefined,
    };
    calls.push(c);
    c.ws.on('message', (data: Buffer) => onMessage(c, data));
    c.ws.on('error', () => c.violations++);
    pending.push(
      new Promise<void>((resolve, reject) => {
        c.ws.once('open', () => {
          send(c, JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
          send(
            c,
            JSON.stringify({
              event: 'start',
              sequenceNumber: String(++c.seq),
              start: {
                accountSid: 'AC0',
                streamSid: c.streamSid,
                callSid: c.callSid,
                tracks: ['inbound'],
                mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: SAMPLE_RATE, channels: 1 },
                customParameters: {},
              },
              streamSid: c.streamSid,
            }),
          );
          c.t0 = performance.now() + (i * FRAME_MS) / count;
          resolve();
        });
        c.ws.once('unexpected-response', () => reject(new Error('upgrade refused')));
      }),
    );
    // Connect in small batches, as calls arrive, not all in one instant.
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
    // The caller's side streams from the first connection on.
    ticker ??= setInterval(tick, TICK_MS);
  }
  await Promise.all(pending);
}

function report(): TalkerReport {
  const lag = sendLag;
  const out: TalkerReport = {
    type: 'report',
    lateness,
    gaps,
    frames,
    violations: calls.reduce((n, c) => n + c.violations, 0),
    talks,
    skippedTalks,
    clears,
    botAudioMs: { ...botAudioMs },
    sendLag: {
      p50: percentile(lag, 50),
      p99: percentile(lag, 99),
      max: lag.reduce((m, v) => Math.max(m, v), 0),
    },
    cpu: process.cpuUsage(),
    rss: process.memoryUsage().rss,
  };
  lateness = [];
  sendLag = [];
  gaps = 0;
  frames = 0;
  talks = [];
  skippedTalks = 0;
  clears = [];
  botAudioMs.echo = 0;
  botAudioMs.noEcho = 0;
  for (const c of calls) {
    // A new phase: the next frame of every call starts a new run; talks not begun are dropped.
    c.playheadEnd = Math.min(c.playheadEnd, performance.now());
    c.planned = [];
    c.armed = false;
    c.promptStart = undefined;
  }
  return out;
}

process.on(
  'message',
  (m: {
    cmd: string;
    url?: string;
    calls?: number;
    seed?: number;
    promptMs?: number;
    talkFraction?: number;
    secondTalkFraction?: number;
  }) => {
    if (m.cmd === 'open') {
      open(m.url!, m.calls!, m.seed ?? 1).then(
        () =>
          process.send!({
            type: 'ready',
            callSids: calls.map((c) => c.callSid),
            lines: calls.map((c) => c.line),
          }),
        (error: unknown) => process.send!({ type: 'error', message: (error as Error).message }),
      );
    } else if (m.cmd === 'round') {
      round = {
        promptMs: m.promptMs!,
        talkFraction: m.talkFraction!,
        secondTalkFraction: m.secondTalkFraction!,
      };
      roundRandom = seeded(m.seed ?? 1);
      // From here on: the catch-up after a report (which holds this process's loop a while) is not the callers' lag.
      sendLag = [];
      for (const c of calls) {
        c.armed = true;
        c.promptStart = undefined;
        c.planned = [];
      }
      process.send!({ type: 'armed' });
    } else if (m.cmd === 'cpu') {
      process.send!({ type: 'cpu', cpu: process.cpuUsage() });
    } else if (m.cmd === 'report') {
      process.send!(report());
    } else if (m.cmd === 'close') {
      if (ticker) clearInterval(ticker);
      for (const c of calls) {
        for (const timer of c.markTimers.keys()) clearTimeout(timer);
        c.ws.close();
      }
      setTimeout(() => process.exit(0), 200);
    }
  },
);
