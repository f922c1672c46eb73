/**
 * The ONNX engine's checks, its sentences and its word estimate, without the runtime: an ONNX file
 * written by testkit/onnx reads back as written, and every fault of a model directory that would end
 * sherpa-onnx's process is found first and reported (the model is skipped, not loaded).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectOnnxModels, modelIdOf } from '../../../src/service/engine/onnx/model-dir.js';
import { readOnnxInfo } from '../../../src/service/engine/onnx/onnx-file.js';
import { sentencesOf, speakable } from '../../../src/service/engine/onnx/sentences.js';
import { estimateWords } from '../../../src/service/engine/onnx/word-estimate.js';
import { DataType, encodeModel } from '../../../testkit/onnx/proto.js';
import { writeVitsTestModel } from '../../../testkit/onnx/vits.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'voxbridge-onnx-unit-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A model file of a Piper voice's shape (inputs x, x_length, scales, sid), weights left out. */
function piperModel(
  metadata: Record<string, string>,
  inputs = ['x', 'x_length', 'scales', 'sid'],
): Uint8Array {
  return encodeModel({
    nodes: [{ op: 'Identity', inputs: ['scales'], outputs: ['y'], name: 'n' }],
    initializers: [],
    inputs: inputs.map((name) => ({ name, type: DataType.FLOAT, shape: [1] })),
    outputs: [{ name: 'y', type: DataType.FLOAT, shape: [1] }],
    metadata,
  });
}

const PIPER_META = {
  model_type: 'vits',
  comment: 'piper',
  language: 'English',
  voice: 'en-us',
  n_speakers: '3',
  sample_rate: '22050',
};

async function piperDir(
  name: string,
  metadata: Record<string, string> = PIPER_META,
  inputs?: string[],
): Promise<string> {
  const dir = join(root, name);
  await mkdir(join(dir, 'espeak-ng-data'), { recursive: true });
  await writeFile(join(dir, `${name}.onnx`), piperModel(metadata, inputs));
  await writeFile(join(dir, 'tokens.txt'), '_ 0\n^ 1\n$ 2\n  3\na 4\nə 5\n');
  for (const f of ['phontab', 'phonindex', 'phondata', 'intonations'])
    await writeFile(join(dir, 'espeak-ng-data', f), '');
  return dir;
}

describe('reading an ONNX file', () => {
  it('gives back the metadata, inputs and outputs testkit wrote, weights not counted as inputs', () => {
    const bytes = encodeModel({
      nodes: [{ op: 'Add', inputs: ['a', 'w'], outputs: ['out'], name: 'add' }],
      initializers: [{ name: 'w', dims: [2], type: DataType.FLOAT, data: Float32Array.of(1, 2) }],
      inputs: [
        { name: 'a', type: DataType.FLOAT, shape: [2] },
        // IR version 3 lists weights among the inputs.
        { name: 'w', type: DataType.FLOAT, shape: [2] },
      ],
      outputs: [{ name: 'out', type: DataType.FLOAT, shape: ['N'] }],
      metadata: { sample_rate: '22050', comment: 'ünïcode ✓' },
    });
    const info = readOnnxInfo(bytes);
    expect(Object.fromEntries(info.metadata)).toEqual({ sample_rate: '22050', comment: 'ünïcode ✓' });
    expect(info.inputs).toEqual(['a']);
    expect(info.outputs).toEqual(['out']);
  });

  it('refuses bytes that are not a model', () => {
    expect(() => readOnnxInfo(new TextEncoder().encode('this is not protobuf at all'))).toThrow();
    expect(() => readOnnxInfo(Uint8Array.of(0x3a, 0x40, 1, 2))).toThrow(/past the end/);
  });
});

describe('checking a model directory', () => {
  it('takes a lexicon VITS model: its speakers, rate, languages and files', async () => {
    const m = await writeVitsTestModel(join(root, 'lexicon-model'), { speakers: 3 });
    const { models, skipped } = await inspectOnnxModels([
      { path: m.dir, name: 'My Voice!', speakers: [2, 0] },
    ]);
    expect(skipped).toEqual([]);
    expect(models).toEqual([
      expect.objectContaining({
        id: 'my-voice',
        name: 'My Voice!',
        frontend: 'lexicon',
        family: 'vits',
        sampleRate: 22_050,
        speakers: [
          { sid: 2, name: undefined },
          { sid: 0, name: undefined },
        ],
        languages: ['en', 'en-us'],
        lexiconFile: join(m.dir, 'lexicon.txt'),
        noiseScale: 0.667,
        lengthScale: 1,
      }),
    ]);
  });

  it('takes a Piper model with espeak-ng-data, and its speakers’ names from its .onnx.json', async () => {
    const dir = await piperDir('en_US-test-medium');
    await writeFile(
      join(dir, 'en_US-test-medium.onnx.json'),
      JSON.stringify({ speaker_id_map: { alice: 0, bob: 1, carol: 2 } }),
    );
    const { models, skipped } = await inspectOnnxModels([{ path: dir }]);
    expect(skipped).toEqual([]);
    expect(models[0]).toMatchObject({
      id: 'en-us-test-medium',
      frontend: 'espeak',
      family: 'piper',
      dataDir: join(dir, 'espeak-ng-data'),
      speakers: [
        { sid: 0, name: 'alice' },
        { sid: 1, name: 'bob' },
        { sid: 2, name: 'carol' },
      ],
    });
  });

  it('skips, with the reason, every model sherpa-onnx would end the process on', async () => {
    const cases: Array<[string, () => Promise<string>, RegExp]> = [
      ['missing dir', async () => join(root, 'nowhere'), /not a directory/],
      ['no comment', () => piperDir('no-comment', { ...PIPER_META, comment: '' }), /metadata has no comment/],
      [
        'no sample rate',
        async () => {
          const { sample_rate: _, ...rest } = PIPER_META;
          return piperDir('no-rate', rest);
        },
        /metadata has no sample_rate/,
      ],
      [
        'negative int',
        () => piperDir('negative', { ...PIPER_META, add_blank: '-1' }),
        /add_blank is negative/,
      ],
      ['kokoro', () => piperDir('kokoro', { ...PIPER_META, model_type: 'kokoro' }), /only VITS/],
      [
        'wrong inputs',
        () => piperDir('inputs', PIPER_META, ['x', 'x_length', 'noise_scale', 'length_scale']),
        /inputs are \(x, x_length, noise_scale, length_scale\)/,
      ],
      [
        'bad tokens line',
        async () => {
          const dir = await piperDir('bad-tokens');
          await writeFile(join(dir, 'tokens.txt'), '_ 0\n^ 1 extra\n$ 2\n');
          return dir;
        },
        /tokens.txt line 2/,
      ],
      [
        'no pad token',
        async () => {
          const dir = await piperDir('no-pad');
          await writeFile(join(dir, 'tokens.txt'), '^ 1\n$ 2\n');
          return dir;
        },
        /tokens.txt has no _/,
      ],
      [
        'no espeak data files',
        async () => {
          const dir = await piperDir('no-phondata');
          await rm(join(dir, 'espeak-ng-data', 'phondata'));
          return dir;
        },
        /espeak-ng-data has no phondata/,
      ],
      [
        'lexicon model without a lexicon',
        async () => {
          const m = await writeVitsTestModel(join(root, 'no-lexicon'));
          await rm(join(m.dir, 'lexicon.txt'));
          return m.dir;
        },
        /no lexicon.txt/,
      ],
      [
        'lexicon model without a blank token',
        async () => {
          const m = await writeVitsTestModel(join(root, 'no-blank'));
          const tokens = await readFile(join(m.dir, 'tokens.txt'), 'utf8');
          await writeFile(join(m.dir, 'tokens.txt'), tokens.split('\n').slice(1).join('\n'));
          return m.dir;
        },
        /no blank/,
      ],
      [
        'an unknown speaker',
        async () => (await writeVitsTestModel(join(root, 'speakers'), { speakers: 2 })).dir,
        /no speaker 5/,
      ],
    ];
    for (const [what, make, reason] of cases) {
      const path = await make();
      const { models, skipped } = await inspectOnnxModels([
        { path, ...(what === 'an unknown speaker' ? { speakers: [0, 5] } : {}) },
      ]);
      expect(models, what).toEqual([]);
      expect(skipped, what).toEqual([
        { what: `ONNX model ${path}`, reason: expect.stringMatching(reason) as unknown },
      ]);
    }
  });

  it('skips the second of two models of the same name, keeping the first', async () => {
    const a = await writeVitsTestModel(join(root, 'same-a'));
    const b = await writeVitsTestModel(join(root, 'same-b'));
    const { models, skipped } = await inspectOnnxModels([
      { path: a.dir, name: 'same' },
      { path: b.dir, name: 'Same' },
    ]);
    expect(models.map((m) => m.dir)).toEqual([a.dir]);
    expect(skipped[0]!.reason).toMatch(/another model is named same/);
  });

  it('makes stable ids of names', () => {
    expect(modelIdOf('vits-piper-en_US-amy-medium')).toBe('vits-piper-en-us-amy-medium');
    expect(modelIdOf('  Ünï Voice  2 ')).toBe('n-voice-2');
  });
});

describe('sentences and what sherpa-onnx is given', () => {
  it('cuts a piece at its sentences, and a long sentence at its clauses, with code point offsets', () => {
    const piece =
      '🙂 Hi there. This sentence is rather long, and it goes on past sixty characters, so it is cut. Ok?';
    const sentences = sentencesOf(piece);
    expect(sentences.map((s) => s.text)).toEqual([
      '🙂 Hi there.',
      'This sentence is rather long,',
      // A clause under 20 characters joins the one before it.
      'and it goes on past sixty characters, so it is cut.',
      'Ok?',
    ]);
    const points = [...piece];
    for (const s of sentences)
      expect(points.slice(s.start, s.start + [...s.text].length).join('')).toBe(s.text);
  });

  it('never gives text that yields no token: none without a word, a lexicon’s only with a word it has', () => {
    const lexicon = new Set(['hello', 'world']);
    expect(speakable('...', 'espeak', undefined)).toBeUndefined();
    expect(speakable('Zyx qq.', 'espeak', undefined)).toBe('Zyx qq.');
    expect(speakable('Zyx qq.', 'lexicon', lexicon)).toBeUndefined();
    expect(speakable('Hello world!', 'lexicon', lexicon)).toBe('Hello world!');
    // Cut at a clause: a sentence mark is added, so a blank token always ends it.
    expect(speakable('Hello, zyx,', 'lexicon', lexicon)).toBe('Hello, zyx, .');
  });

  it('estimates word times over the sound, in proportion to letters, from the sentence’s place', () => {
    const rate = 1000;
    // 100 ms of silence, 900 ms of sound, 100 ms of silence.
    const audio = new Int16Array(1100);
    audio.fill(5000, 100, 1000);
    const words = estimateWords({ text: 'Hi, there you', start: 7 }, audio, rate, 500);
    expect(words.map((w) => [w.start, w.end])).toEqual([
      [7, 9],
      [11, 16],
      [17, 20],
    ]);
    // Weights 3, 6, 4 of 13 over 900 ms, from 600 ms.
    expect(words[0]!.startMs).toBeCloseTo(600);
    expect(words[0]!.endMs).toBeCloseTo(600 + (900 * 3) / 13);
    expect(words[2]!.endMs).toBeCloseTo(1500);
    for (let i = 1; i < words.length; i++) expect(words[i]!.startMs).toBeCloseTo(words[i - 1]!.endMs);
  });
});
