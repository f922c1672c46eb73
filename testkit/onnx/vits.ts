/**
 * A VITS text-to-speech model of the right shape, with random weights, written to a directory as
 * sherpa-onnx reads one: `model.onnx` (inputs x, x_length, noise_scale, length_scale, noise_scale_w and,
 * with several speakers, sid; output y), `tokens.txt` and `lexicon.txt` (words spelled in letters: the
 * lexicon front end, so no espeak-ng-data is needed), and the metadata sherpa-onnx reads.
 *
 * The graph is VITS's, in miniature: a text encoder (token embedding plus the speaker's, then layers of
 * MatMul and Tanh), each token given `ceil(length_scale × framesPerToken)` frames (Expand and Reshape:
 * VITS's length regulator with a fixed duration), and a decoder from frames to `hopSamples` samples
 * each. So the audio of T tokens is exactly `T × ceil(length_scale × framesPerToken) × hopSamples`
 * samples. Two decoders:
 *
 * - `tone` (tests): a sine at the speaker's own frequency (`toneHz`), its loudness moved by the frames
 *   (Sigmoid of a MatMul): a voice a test can recognise at the far end of a phone call by its pitch.
 * - `hifigan` (benchmarks): Piper's medium voice at its size: a text encoder of 6 layers of 192 with
 *   attention's projections and a 768-wide feed-forward, a flow of 16 gated WaveNet layers at the
 *   frame rate, and HiFi-GAN's generator as Piper's medium voices have it (ConvTranspose upsampling by
 *   8, 8, 4 from 256 channels, residual blocks of kernels 3, 5, 7 with dilations (1, 2), (2, 6),
 *   (3, 12)): the same convolutions at the same sizes, hence about the same cost, with ~16 M weights.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GraphBuilder } from './graph.js';
import { DataType } from './proto.js';

export interface VitsTestModelOptions {
  /** 1: a single-speaker model (no `sid` input). */
  readonly speakers?: number;
  readonly sampleRate?: number;
  /** Frames per token at length_scale 1. */
  readonly framesPerToken?: number;
  readonly decoder?: 'tone' | 'hifigan';
  /** `tone`: each speaker's frequency (Hz); by default 300 Hz, 700 Hz, 1100 Hz, … */
  readonly toneHz?: readonly number[];
  /** The text encoder's width and depth. */
  readonly hidden?: number;
  readonly encoderLayers?: number;
  /** `hifigan`: channels after the first convolution (Piper medium: 256). */
  readonly decoderChannels?: number;
  /** Words the lexicon spells, besides `TESTKIT_WORDS`. */
  readonly words?: readonly string[];
  /** Metadata beside the required entries (or replacing them). */
  readonly metadata?: Readonly<Record<string, string>>;
  readonly seed?: number;
}

export interface VitsTestModel {
  readonly dir: string;
  readonly sampleRate: number;
  readonly hopSamples: number;
  readonly framesPerToken: number;
  readonly speakers: number;
  readonly toneHz: readonly number[];
  readonly parameters: number;
  readonly bytes: number;
  /** Token ids of `text` as sherpa-onnx's lexicon front end makes them (for the expected length). */
  tokens(text: string): number;
}

/** The punctuation the model has tokens for (sherpa-onnx's lexicon front end keeps these). */
const PUNCTUATION = ['.', ',', '!', '?', ';', ':', '-'];
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/**
 * Words every test model spells: the engine pool's warm-up sentence, and everyday words a test may say.
 */
export const TESTKIT_WORDS: readonly string[] = (
  'warming up the quick brown fox jumps over lazy dog times twenty three ' +
  'hello world good morning afternoon evening how are you today thank thanks for calling welcome to ' +
  'a an and or is it this that was be can will please press one two four five six seven eight nine ' +
  'zero ten yes no your call our we i me my here there what when where who why speak with neural ' +
  'voice testing sentence second third last first again goodbye bye now wait moment listen say ' +
  'name number account help menu option options main back home line agent person'
)
  .split(' ')
  .filter((w) => w.length > 0);

/**
 * HiFi-GAN as Piper's medium voices configure it (piper_train's default audio config, which its medium
 * quality keeps: the multi-receptive-field blocks of kind "2", one convolution per dilation).
 */
const HIFIGAN = {
  initialChannels: 256,
  upsampleRates: [8, 8, 4],
  upsampleKernels: [16, 16, 8],
  resblockKernels: [3, 5, 7],
  dilations: [
    [1, 2],
    [2, 6],
    [3, 12],
  ],
} as const;
/** Piper medium's flow: 4 coupling layers of 4 WaveNet layers (kernel 5), at the frame rate. */
const FLOW_LAYERS = 16;
const FLOW_KERNEL = 5;
const LEAKY_SLOPE = 0.1;

function spell(word: string): string[] {
  return [...word.toLowerCase()].filter((c) => LETTERS.includes(c));
}

export async function writeVitsTestModel(
  dir: string,
  options: VitsTestModelOptions = {},
): Promise<VitsTestModel> {
  const speakers = options.speakers ?? 1;
  const sampleRate = options.sampleRate ?? 22_050;
  const framesPerToken = options.framesPerToken ?? 4;
  const decoder = options.decoder ?? 'tone';
  const hidden = options.hidden ?? 16;
  const encoderLayers = options.encoderLayers ?? 1;
  const toneHz = options.toneHz ?? Array.from({ length: speakers }, (_, i) => 300 + 400 * i);
  const hopSamples = decoder === 'hifigan' ? HIFIGAN.upsampleRates.reduce((a, b) => a * b, 1) : 256;

  // tokens.txt: the blank (a space) is 0, then the letters, then punctuation.
  const symbols = [' ', ...LETTERS, ...PUNCTUATION];
  const words = [...new Set([...TESTKIT_WORDS, ...(options.words ?? [])].map((w) => w.toLowerCase()))].filter(
    (w) => spell(w).length > 0,
  );

  const g = new GraphBuilder(options.seed ?? 1);
  // Text encoder: token and speaker embeddings, then MatMul + Tanh layers.
  let h = g.op('Gather', [g.weight([symbols.length, hidden], 1), 'x'], { axis: { int: 0 } });
  if (speakers > 1) {
    const speaker = g.op('Gather', [g.weight([speakers, hidden], 1), 'sid'], { axis: { int: 0 } });
    h = g.op('Add', [h, g.op('Unsqueeze', [speaker, g.int64s([1], [1])])]);
  }
  for (let i = 0; i < encoderLayers; i++) {
    // A transformer layer's weights and most of its work: attention's four projections, then the
    // feed-forward (a kernel-3 convolution 192 → 768 → 192 in VITS, here as MatMuls of the same size).
    let a = h;
    for (let j = 0; j < (decoder === 'hifigan' ? 4 : 0); j++)
      a = g.op('MatMul', [a, g.weight([hidden, hidden])]);
    const width = decoder === 'hifigan' ? 3 * 4 * hidden : 4 * hidden;
    const up = g.op('Tanh', [g.op('MatMul', [a, g.weight([hidden, width])])]);
    h = g.op('Tanh', [g.op('Add', [h, g.op('MatMul', [up, g.weight([width, hidden])])])]);
  }
  // Length regulator: every token gets ceil(length_scale × framesPerToken) frames.
  const frames = g.op(
    'Cast',
    [g.op('Ceil', [g.op('Mul', ['length_scale', g.floats([1], [framesPerToken])])])],
    {
      to: { int: DataType.INT64 },
    },
  );
  const tokens = g.op('Gather', [g.op('Shape', ['x']), g.int64s([1], [1])], { axis: { int: 0 } });
  const one = g.int64s([1], [1]);
  const width = g.int64s([1], [hidden]);
  const expanded = g.op('Expand', [
    g.op('Unsqueeze', [h, g.int64s([1], [2])]),
    g.op('Concat', [one, tokens, frames, width], { axis: { int: 0 } }),
  ]);
  const frameCount = g.op('Mul', [tokens, frames]);
  const z = g.op('Reshape', [expanded, g.op('Concat', [one, frameCount, width], { axis: { int: 0 } })]); // [1, F, H]
  const sampleCount = g.op('Mul', [frameCount, g.int64s([1], [hopSamples])]);

  let y: string;
  if (decoder === 'tone') {
    // Loudness per frame, held for the frame's samples.
    const loudness = g.op('Sigmoid', [g.op('MatMul', [z, g.weight([hidden, 1])])]); // [1, F, 1]
    const held = g.op('Reshape', [
      g.op('Expand', [
        loudness,
        g.op('Concat', [one, frameCount, g.int64s([1], [hopSamples])], { axis: { int: 0 } }),
      ]),
      g.op('Concat', [one, one, sampleCount], { axis: { int: 0 } }),
    ]); // [1, 1, N]
    const n = g.op(
      'Cast',
      [g.op('Range', [g.int64s([], [0]), g.op('Squeeze', [sampleCount]), g.int64s([], [1])])],
      {
        to: { int: DataType.FLOAT },
      },
    );
    const omegas = toneHz.map((f) => (2 * Math.PI * f) / sampleRate);
    const omega =
      speakers > 1
        ? g.op('Gather', [g.floats([speakers], omegas), 'sid'], { axis: { int: 0 } })
        : g.floats([1], [omegas[0]!]);
    const carrier = g.op('Sin', [g.op('Mul', [n, omega])]);
    const envelope = g.op('Add', [g.floats([1], [0.15]), g.op('Mul', [held, g.floats([1], [0.25])])]);
    y = g.op('Mul', [carrier, envelope]);
  } else {
    const channels = options.decoderChannels ?? HIFIGAN.initialChannels;
    const conv = (input: string, cin: number, cout: number, k: number, dilation = 1): string =>
      g.op('Conv', [input, g.weight([cout, cin, k]), g.weight([cout], 0.01)], {
        kernel_shape: { ints: [k] },
        dilations: { ints: [dilation] },
        pads: { ints: [(dilation * (k - 1)) / 2, (dilation * (k - 1)) / 2] },
      });
    const leaky = (input: string): string => g.op('LeakyRelu', [input], { alpha: { float: LEAKY_SLOPE } });
    let x = g.op('Transpose', [z], { perm: { ints: [0, 2, 1] } }); // [1, H, F]
    // The flow, at the frame rate: gated WaveNet layers with residuals.
    for (let i = 0; i < FLOW_LAYERS; i++) {
      const gate = g.op('Mul', [
        g.op('Tanh', [conv(x, hidden, hidden, FLOW_KERNEL)]),
        g.op('Sigmoid', [conv(x, hidden, hidden, FLOW_KERNEL)]),
      ]);
      x = g.op('Add', [x, g.op('Add', [conv(gate, hidden, hidden, 1), conv(gate, hidden, hidden, 1)])]);
      x = g.op('Mul', [x, g.floats([1], [0.5])]);
    }
    // The decoder, from frames to samples.
    x = conv(x, hidden, channels, 7);
    let cin = channels;
    for (const [i, rate] of HIFIGAN.upsampleRates.entries()) {
      const k = HIFIGAN.upsampleKernels[i]!;
      const cout = cin / 2;
      x = g.op('ConvTranspose', [leaky(x), g.weight([cin, cout, k]), g.weight([cout], 0.01)], {
        kernel_shape: { ints: [k] },
        strides: { ints: [rate] },
        pads: { ints: [(k - rate) / 2, (k - rate) / 2] },
      });
      let sum: string | undefined;
      for (const [j, kernel] of HIFIGAN.resblockKernels.entries()) {
        let r = x;
        for (const d of HIFIGAN.dilations[j]!) r = g.op('Add', [conv(leaky(r), cout, cout, kernel, d), r]);
        sum = sum === undefined ? r : g.op('Add', [sum, r]);
      }
      x = g.op('Mul', [sum!, g.floats([1], [1 / HIFIGAN.resblockKernels.length])]);
      cin = cout;
    }
    y = g.op('Tanh', [conv(leaky(x), cin, 1, 7)]);
  }
  g.rename(y, 'y');

  const inputs = [
    { name: 'x', type: DataType.INT64, shape: [1, 'T'] },
    { name: 'x_length', type: DataType.INT64, shape: [1] },
    { name: 'noise_scale', type: DataType.FLOAT, shape: [1] },
    { name: 'length_scale', type: DataType.FLOAT, shape: [1] },
    { name: 'noise_scale_w', type: DataType.FLOAT, shape: [1] },
    ...(speakers > 1 ? [{ name: 'sid', type: DataType.INT64, shape: [1] }] : []),
  ] as const;
  const metadata: Record<string, string> = {
    model_type: 'vits',
    comment: 'voxbridge testkit: random weights',
    language: 'English',
    voice: 'en-us',
    add_blank: '0',
    n_speakers: String(speakers > 1 ? speakers : 1),
    sample_rate: String(sampleRate),
    punctuation: PUNCTUATION.join(' '),
    ...options.metadata,
  };
  // Inputs that a graph takes but does not use are still inputs: sherpa-onnx feeds them by position.
  const bytes = g.encode(inputs, [{ name: 'y', type: DataType.FLOAT, shape: [1, 1, 'N'] }], metadata);

  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'model.onnx'), bytes);
  await writeFile(join(dir, 'tokens.txt'), symbols.map((s, i) => `${s} ${i}\n`).join(''));
  await writeFile(join(dir, 'lexicon.txt'), words.map((w) => `${w} ${spell(w).join(' ')}\n`).join(''));

  return {
    dir,
    sampleRate,
    hopSamples,
    framesPerToken,
    speakers,
    toneHz,
    parameters: g.parameters,
    bytes: bytes.length,
    tokens(text: string): number {
      // sherpa-onnx's lexicon front end: each known word's letters and a blank; a kept punctuation
      // mark; a sentence mark ends its sentence with a blank; the last blank of the text is dropped.
      let count = 0;
      let sentence = 0;
      const sentences: number[] = [];
      for (const w of text.toLowerCase().match(/[a-z']+|[.,!?;:-]/g) ?? []) {
        if (PUNCTUATION.includes(w)) {
          sentence += 1;
          if (w !== ',') {
            sentences.push(sentence + 1);
            sentence = 0;
          }
          continue;
        }
        if (!words.includes(w)) continue;
        sentence += spell(w).length + 1;
      }
      if (sentence > 0) sentences.push(sentence - 1);
      for (const s of sentences) count += s;
      return count;
    },
  };
}
