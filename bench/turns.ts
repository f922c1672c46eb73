/**
 * Ending a caller's turn (issue 45, part 3): the pause corpus (testkit/turn-corpus.ts: pauses of
 * 300–900 ms mid-number, after "um", between clauses, and complete short answers), spoken by the
 * cast's eight built-in voices (the local service, with its character timings) and seven eSpeak voices,
 * on a phone line (8 kHz μ-law) with no noise and with white noise at 20 dB SNR, run through the
 * caller's VAD as a call runs it (testkit/turn-replay.ts). Today's fixed 700 ms of silence against the
 * endpointing rule (src/barge-in/endpointing.ts) given, at each window of silence, the words a realtime
 * speech-to-text delivering each word 150 ms after it is spoken would have given: premature cut-offs
 * (turns ended at a pause within them) and the end-of-turn latency after the last word. Then the rule
 * under other transcribers and each default moved, to show the margins the defaults keep.
 */
import {
  classifyTranscript,
  DEFAULT_ENDPOINTING,
  endpointingConfig,
  SileroModel,
  type EndpointingConfig,
} from '../src/barge-in/index.js';
import { BUILT_IN_VOICE_IDS } from '../src/service/voices/builtin.js';
import {
  corpusTurn,
  espeakVoice,
  serviceVoice,
  TURN_SCRIPTS,
  type CorpusTurn,
  type SpokenPart,
  type TurnKind,
  type TurnVoice,
} from '../testkit/turn-corpus.js';
import {
  detectorTurns,
  fixedEnd,
  outcome,
  ruleEnd,
  silenceSteps,
  sttTranscript,
  type SilenceStep,
  type SttStyle,
  type TurnEnd,
  type TurnOutcome,
} from '../testkit/turn-replay.js';
import { VOICES } from '../testkit/vad-audio.js';
import { BENCH_KEY, startBenchApp } from './app.js';
import { fmt, percentile, printTable } from './stats.js';

const TODAY_MS = 700;
const STT_LATENCY_MS = 150;
const LINES: ReadonlyArray<number | undefined> = [undefined, 20];
const KINDS: readonly TurnKind[] = ['number', 'hesitation', 'clause', 'short-answer', 'sentence'];
/** Voices whose turns are also ended by the detector itself, to check the replay of today's rule. */
const CHECKED_VOICES = 3;

interface Case {
  readonly turn: CorpusTurn;
  readonly snr: number | undefined;
  readonly steps: readonly SilenceStep[];
  /** How the whole turn's words end: complete (a sentence or short answer), on a number, or else. */
  readonly ending: 'complete' | 'number' | 'other';
}

type Policy = (c: Case) => TurnEnd | undefined;

const fixed =
  (ms: number): Policy =>
  (c) =>
    fixedEnd(c.steps, ms);
const rule =
  (
    config: EndpointingConfig = DEFAULT_ENDPOINTING,
    latencyMs = STT_LATENCY_MS,
    style: SttStyle = 'written',
  ): Policy =>
  (c) =>
    ruleEnd(c.steps, sttTranscript(c.turn.words, latencyMs, style), config);

const pct = (part: number, whole: number): string => (whole > 0 ? `${fmt((100 * part) / whole)} %` : 'n/a');

function cached(voice: TurnVoice): TurnVoice {
  const parts = new Map<string, Promise<SpokenPart>>();
  return {
    name: voice.name,
    speak(text) {
      let part = parts.get(text);
      if (!part) parts.set(text, (part = voice.speak(text)));
      return part;
    },
  };
}

interface Tally {
  readonly turns: number;
  /** Ended at a pause within them, with what the rule said there. */
  readonly cut: Array<{ readonly c: Case; readonly o: TurnOutcome }>;
  /** No turn heard at all (the VAD found no speech in them). */
  never: number;
  /** After the last word, for the turns ended after it: all, those ending complete, those on a number. */
  readonly latency: number[];
  readonly complete: number[];
  readonly number: number[];
}

function tally(cases: readonly Case[], policy: Policy): Tally {
  const t: Tally = { turns: cases.length, cut: [], never: 0, latency: [], complete: [], number: [] };
  for (const c of cases) {
    const o = outcome(c.turn, policy(c));
    if (o.premature) t.cut.push({ c, o });
    else if (o.latencyMs === undefined) t.never++;
    else {
      t.latency.push(o.latencyMs);
      if (c.ending === 'complete') t.complete.push(o.latencyMs);
      if (c.ending === 'number') t.number.push(o.latencyMs);
    }
  }
  return t;
}

const p = (values: readonly number[], q: number): string => fmt(percentile(values, q), 0);

function summary(name: string, t: Tally): string[] {
  return [
    name,
    `${pct(t.cut.length, t.turns)} (${t.cut.length})`,
    p(t.latency, 50),
    p(t.latency, 95),
    p(t.complete, 50),
    p(t.complete, 95),
    p(t.number, 50),
    p(t.number, 95),
    String(t.never),
  ];
}

const SUMMARY_HEADER = [
  'end of turn',
  'premature cut-offs',
  'latency p50 ms',
  'p95',
  'complete answers p50',
  'p95',
  'ending on a number p50',
  'p95',
  'never ended',
];

export async function benchTurns(): Promise<void> {
  const app = await startBenchApp('turns');
  const model = await SileroModel.load();
  try {
    const api = `${app.app.url}/api/speech`;
    const voices = [
      ...BUILT_IN_VOICE_IDS.map((id) => serviceVoice(api, BENCH_KEY, id)),
      ...VOICES.map((v) => espeakVoice(v)),
    ].map(cached);
    const cases: Case[] = [];
    let checked = 0;
    let agreed = 0;
    let seed = 1;
    for (const [v, voice] of voices.entries())
      for (const script of TURN_SCRIPTS) {
        seed++;
        for (const snr of LINES) {
          // The same pauses on every line: the seed draws them.
          const turn = await corpusTurn(script, voice, { seed, snrDb: snr });
          const steps = await silenceSteps(model, turn);
          const cue = classifyTranscript(turn.text).cue;
          const ending =
            cue === 'sentence-end' || cue === 'short-answer'
              ? 'complete'
              : cue === 'number'
                ? 'number'
                : 'other';
          const c: Case = { turn, snr, steps, ending };
          cases.push(c);
          if (v < CHECKED_VOICES) {
            checked++;
            const own = (await detectorTurns(model, turn, TODAY_MS))[0]?.decidedMs;
            const replayed = fixedEnd(steps, TODAY_MS)?.atMs;
            // The detector's own times add up 20 ms pushes: equal to within floating-point error.
            if (
              own === replayed ||
              (own !== undefined && replayed !== undefined && Math.abs(own - replayed) < 1)
            )
              agreed++;
          }
        }
      }
    const voiceCount = voices.length;
    const today = tally(cases, fixed(TODAY_MS));
    const ours = tally(cases, rule());
    printTable(
      `Ending a caller's turn: the pause corpus (${voiceCount} voices × ${TURN_SCRIPTS.length} turns × ${LINES.length} lines = ${cases.length} turns, μ-law 8 kHz, no noise and 20 dB SNR; speech-to-text words ${STT_LATENCY_MS} ms after they are spoken; latency from the end of the last word)`,
      SUMMARY_HEADER,
      [summary(`fixed ${TODAY_MS} ms (today)`, today), summary('endpointing rule (defaults)', ours)],
    );
    console.log(
      `(today's rule replayed from the detector's silences, checked against the detector ending turns itself: ${agreed} of ${checked} turns decided at the same window)`,
    );

    // How much longer than a pause the VAD's silence there lasts: what a wait must leave room for.
    const excess: number[] = [];
    for (const c of cases)
      for (const pause of c.turn.pauses) {
        let longest = 0;
        for (const s of c.steps) {
          const from = s.atMs - s.silenceMs;
          if (from <= pause.endMs && s.atMs >= pause.startMs && from >= pause.startMs - 500)
            longest = Math.max(longest, s.silenceMs);
        }
        if (longest > 0) excess.push(longest - (pause.endMs - pause.startMs));
      }
    console.log(
      `(at the ${excess.length} pauses heard, the VAD's silence outlasts the pause by ${p(excess, 50)} ms p50, ${p(excess, 95)} ms p95, ${p(excess, 99)} ms p99)`,
    );

    printTable(
      'Premature cut-offs by where the caller paused',
      ['turns', 'count', `fixed ${TODAY_MS} ms`, 'rule', 'rule latency p50 ms', 'p95'],
      KINDS.map((kind) => {
        const of = cases.filter((c) => c.turn.kind === kind);
        const a = tally(of, fixed(TODAY_MS));
        const b = tally(of, rule());
        return [
          kind,
          String(of.length),
          pct(a.cut.length, a.turns),
          pct(b.cut.length, b.turns),
          p(b.latency, 50),
          p(b.latency, 95),
        ];
      }),
    );

    printTable(
      'By line',
      [
        'line noise',
        `fixed ${TODAY_MS} ms cut-offs`,
        'rule cut-offs',
        'fixed complete p50 ms',
        'rule complete p50 ms',
      ],
      LINES.map((snr) => {
        const of = cases.filter((c) => c.snr === snr);
        const a = tally(of, fixed(TODAY_MS));
        const b = tally(of, rule());
        return [
          snr === undefined ? 'none' : `${snr} dB`,
          pct(a.cut.length, a.turns),
          pct(b.cut.length, b.turns),
          p(a.complete, 50),
          p(b.complete, 50),
        ];
      }),
    );

    printTable(
      'By voice (both lines)',
      [
        'voice',
        `fixed ${TODAY_MS} ms cut-offs`,
        'rule cut-offs',
        'never ended (no turn heard)',
        'rule complete p50 ms',
      ],
      voices.map((voice) => {
        const of = cases.filter((c) => c.turn.voice === voice.name);
        const a = tally(of, fixed(TODAY_MS));
        const b = tally(of, rule());
        return [
          voice.name,
          pct(a.cut.length, a.turns),
          pct(b.cut.length, b.turns),
          String(b.never),
          p(b.complete, 50),
        ];
      }),
    );

    const fixedRows = [400, 500, 1000, 1200, 1500].map((ms) =>
      summary(`fixed ${ms} ms`, tally(cases, fixed(ms))),
    );
    const sttRows = (
      [
        ['written, 300 ms late', 300, 'written'],
        ['no punctuation at all', STT_LATENCY_MS, 'plain'],
        ['full stop at every 300 ms pause', STT_LATENCY_MS, 'eager'],
      ] as const
    ).map(([name, latency, style]) =>
      summary(`rule, ${name}`, tally(cases, rule(DEFAULT_ENDPOINTING, latency, style))),
    );
    printTable('Other fixed silences, and the rule under other transcribers', SUMMARY_HEADER, [
      ...fixedRows,
      ...sttRows,
    ]);

    const moves: Array<[keyof EndpointingConfig, number[]]> = [
      ['completeMs', [150, 200, 300, 350]],
      ['unpunctuatedMs', [700, 900, 1300]],
      ['incompleteMs', [900, 1200]],
      ['numberMs', [900, 1200]],
    ];
    const sweep: string[][] = [];
    for (const [key, values] of moves)
      for (const value of values)
        sweep.push(summary(`${key} ${value}`, tally(cases, rule(endpointingConfig({ [key]: value })))));
    printTable('Each default moved alone (written transcript, 150 ms late)', SUMMARY_HEADER, sweep);

    if (ours.cut.length > 0) {
      console.log(`\nThe rule's premature cut-offs (${ours.cut.length}):`);
      for (const { c, o } of ours.cut.slice(0, 20))
        console.log(
          `- ${c.turn.voice}, ${c.snr === undefined ? 'no noise' : `${c.snr} dB`}: "${c.turn.text}" at ${fmt(o.end!.atMs - c.turn.startMs, 0)} ms into it: ${o.end!.decision?.reason ?? ''}`,
        );
    }
  } finally {
    await app.close();
  }
}
