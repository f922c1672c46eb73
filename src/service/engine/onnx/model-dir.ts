/**
 * A model directory the operator names (`service.engines.onnx.models`), checked before any engine
 * worker hands it to sherpa-onnx: sherpa-onnx ends the whole process (`_Exit`, or a crash) on a
 * metadata key it needs and does not find, a tokens file it cannot read, a front end it cannot build,
 * or inputs that do not match what it feeds. So every such condition of the VITS path (Piper, Coqui,
 * icefall and plain VITS models) is checked here, on the main thread, and a model that fails is
 * skipped with the reason; the service goes on without it.
 *
 * A directory holds one `.onnx` model (or several, one of them named in the config), `tokens.txt`,
 * and its front end: `espeak-ng-data/` for Piper-style models (phonemes from sherpa-onnx's own
 * eSpeak NG), or `lexicon.txt` (words to tokens).
 * That is how sherpa-onnx's `tts-models` release packs them (`vits-piper-en_US-amy-medium.tar.bz2`).
 */
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { readOnnxInfo, type OnnxFileInfo } from './onnx-file.js';

/** One model as the configuration names it. */
export interface OnnxModelConfig {
  /** Its directory. */
  readonly path: string;
  /** Its name in voice ids and names; by default the directory's name. */
  readonly name?: string | undefined;
  /** The `.onnx` file in the directory, when it holds more than one. */
  readonly model?: string | undefined;
  /** Of a model with several speakers, those to offer (speaker ids); by default all. */
  readonly speakers?: readonly number[] | undefined;
  /** VITS's sampling noise (variation in the voice), its duration noise, and its pace (larger: slower). */
  readonly noiseScale?: number | undefined;
  readonly noiseScaleW?: number | undefined;
  readonly lengthScale?: number | undefined;
}

export interface OnnxSpeaker {
  /** The model's speaker id (`sid`). */
  readonly sid: number;
  /** Its name, when the model's Piper config (`*.onnx.json`) has one. */
  readonly name?: string | undefined;
}

/** How sherpa-onnx turns text into the model's tokens: eSpeak NG's phonemes, or a lexicon's. */
export type OnnxFrontend = 'espeak' | 'lexicon';

/** A model that passed every check: what an engine worker loads, and what the voices are made from. */
export interface OnnxModelSpec {
  /** Lower-case letters, digits and dashes, from its name: the stable part of its voices' ids. */
  readonly id: string;
  readonly name: string;
  readonly dir: string;
  readonly modelFile: string;
  readonly tokensFile: string;
  readonly lexiconFile?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly frontend: OnnxFrontend;
  /** `piper`, `coqui`, `icefall` or `vits`: where it comes from, as its metadata says. */
  readonly family: string;
  readonly sampleRate: number;
  /** One entry for a single-speaker model. */
  readonly speakers: readonly OnnxSpeaker[];
  /** Lower-case BCP 47 tags (`en`, `en-us`), from its metadata; empty when it names none we know. */
  readonly languages: readonly string[];
  readonly noiseScale: number;
  readonly noiseScaleW: number;
  readonly lengthScale: number;
}

export interface OnnxSkipped {
  readonly what: string;
  readonly reason: string;
}

class ModelProblem extends Error {}

/** sherpa-onnx's defaults (and Piper's). */
const DEFAULT_NOISE_SCALE = 0.667;
const DEFAULT_NOISE_SCALE_W = 0.8;
const DEFAULT_LENGTH_SCALE = 1;
/** A Piper config beside a model is a few KB; one past this is not read. */
const MAX_JSON_BYTES = 4 << 20;
/** Nor a tokens file past this (Piper's have ~150 lines, character models a few thousand). */
const MAX_TOKENS_BYTES = 4 << 20;

/** Metadata read as integers (C's atoi): a negative value ends sherpa-onnx's process. */
const INTEGER_KEYS = [
  'sample_rate',
  'n_speakers',
  'add_blank',
  'speaker_id',
  'version',
  'num_emotions',
  'jieba',
  'blank_id',
  'bos_id',
  'eos_id',
  'use_eos_bos',
  'pad_id',
  'has_g2pw',
];
/** The punctuation sherpa-onnx's lexicon front end handles (others are words, unknown ones skipped). */
const LEXICON_MARKS = ['.', ';', '!', '?', '-', ':', ','];
const ESPEAK_DATA_FILES = ['phontab', 'phonindex', 'phondata', 'intonations'];

const LANGUAGE_NAMES: Readonly<Record<string, string>> = {
  arabic: 'ar',
  catalan: 'ca',
  chinese: 'zh',
  czech: 'cs',
  danish: 'da',
  dutch: 'nl',
  english: 'en',
  finnish: 'fi',
  french: 'fr',
  german: 'de',
  greek: 'el',
  hindi: 'hi',
  hungarian: 'hu',
  icelandic: 'is',
  italian: 'it',
  japanese: 'ja',
  kazakh: 'kk',
  korean: 'ko',
  norwegian: 'no',
  persian: 'fa',
  polish: 'pl',
  portuguese: 'pt',
  romanian: 'ro',
  russian: 'ru',
  serbian: 'sr',
  slovak: 'sk',
  spanish: 'es',
  swahili: 'sw',
  swedish: 'sv',
  turkish: 'tr',
  ukrainian: 'uk',
  vietnamese: 'vi',
  welsh: 'cy',
};

/** A name as a voice id's part: `vits-piper-en_US-amy-medium` → `vits-piper-en-us-amy-medium`. */
export function modelIdOf(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** C's atoi: leading spaces, a sign, digits; 0 when none. */
function atoi(value: string): number {
  const m = /^\s*([+-]?\d+)/.exec(value);
  return m ? Number.parseInt(m[1]!, 10) : 0;
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() ?? false;
}

async function isDir(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

async function readBounded(path: string, maxBytes: number): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) throw new ModelProblem(`${basename(path)} is larger than ${maxBytes} bytes`);
    return (await handle.readFile()).toString('utf8');
  } finally {
    await handle.close();
  }
}

async function findModelFile(dir: string, named: string | undefined): Promise<string> {
  if (named !== undefined) {
    const path = resolve(dir, named);
    if (!(await isFile(path))) throw new ModelProblem(`its model file ${named} does not exist`);
    return path;
  }
  const onnx = (await readdir(dir)).filter((f) => f.endsWith('.onnx')).sort();
  if (onnx.length === 0) throw new ModelProblem('it holds no .onnx file');
  if (onnx.length > 1) {
    if (onnx.includes('model.onnx')) return join(dir, 'model.onnx');
    throw new ModelProblem(`it holds several .onnx files (${onnx.join(', ')}): name one with "model"`);
  }
  return join(dir, onnx[0]!);
}

/** The metadata sherpa-onnx requires of a VITS model, and the integers it reads, as it reads them. */
function checkMetadata(info: OnnxFileInfo): void {
  const meta = info.metadata;
  for (const key of ['sample_rate', 'n_speakers', 'language', 'comment'])
    if (!meta.get(key)) throw new ModelProblem(`its metadata has no ${key} (sherpa-onnx needs it)`);
  for (const key of INTEGER_KEYS) {
    const value = meta.get(key);
    if (value !== undefined && value !== '' && atoi(value) < 0)
      throw new ModelProblem(`its metadata's ${key} is negative (${value})`);
  }
  const type = meta.get('model_type');
  if (type !== undefined && type !== 'vits')
    throw new ModelProblem(
      `its model_type is ${type}: only VITS models (Piper, Coqui, icefall, VITS) are supported`,
    );
  if (atoi(meta.get('sample_rate')!) <= 0) throw new ModelProblem('its sample_rate is not a rate');
  const comment = meta.get('comment')!;
  if (/melo/.test(comment) || atoi(meta.get('jieba') ?? '0') > 0 || atoi(meta.get('has_g2pw') ?? '0') > 0)
    throw new ModelProblem('MeloTTS and Chinese word-segmenting (jieba, g2pw) models are not supported');
}

function familyOf(comment: string): string {
  if (comment.includes('piper')) return 'piper';
  if (comment.includes('coqui')) return 'coqui';
  if (comment.includes('icefall')) return 'icefall';
  if (comment.includes('Inflect')) return 'inflect';
  return 'vits';
}

/** The inputs sherpa-onnx feeds a model of this family, by position: the graph must take exactly those. */
function checkInputs(info: OnnxFileInfo, family: string): void {
  const inputs = info.inputs;
  const expect = (names: readonly string[], optional: ReadonlyArray<readonly string[]>): void => {
    const fixed = inputs.slice(0, names.length);
    const rest = inputs.slice(names.length);
    const ok =
      fixed.length === names.length &&
      fixed.every((n, i) => n === names[i]) &&
      rest.length <= optional.length &&
      rest.every((n, i) => optional[i]!.includes(n));
    if (!ok)
      throw new ModelProblem(
        `its inputs are (${inputs.join(', ')}); a ${family} model must take (${names.join(', ')}` +
          `${optional.map((o) => `[, ${o.join('|')}]`).join('')})`,
      );
  };
  if (family === 'piper' || family === 'coqui') expect(['x', 'x_length', 'scales'], [['sid'], ['langid']]);
  else if (family === 'inflect') expect(['x', 'x_length', 'noise_scale', 'length_scale'], []);
  else {
    const emotions = atoi(info.metadata.get('num_emotions') ?? '0') > 0;
    expect(
      ['x', 'x_length', 'noise_scale', 'length_scale', 'noise_scale_w'],
      [['sid', 'speaker'], ...(emotions ? [['emotion_id', 'emotion']] : [])],
    );
  }
  if (info.outputs.length === 0) throw new ModelProblem('its graph has no output');
}

/** tokens.txt as sherpa-onnx reads it: `symbol id` or `id` (the space) a line, nothing more. */
function readTokens(text: string, oneCodePoint: boolean): Set<string> {
  const symbols = new Set<string>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') continue;
    const parts = line.trim().split(/\s+/);
    if (parts.length > 2 || !/^-?\d+$/.test(parts[parts.length - 1]!))
      throw new ModelProblem(`tokens.txt line ${i + 1} is not "symbol id"`);
    const symbol = parts.length === 1 ? ' ' : parts[0]!;
    if (oneCodePoint && [...symbol].length !== 1 && symbol !== '<BLNK>')
      throw new ModelProblem(`tokens.txt line ${i + 1}: a symbol of a Piper model is one character`);
    if (oneCodePoint && symbols.has(symbol))
      throw new ModelProblem(`tokens.txt line ${i + 1}: ${symbol} is there twice`);
    symbols.add(symbol);
  }
  return symbols;
}

function languagesOf(meta: ReadonlyMap<string, string>): string[] {
  const out = new Set<string>();
  const voice = meta.get('voice')?.toLowerCase().replace(/_/g, '-');
  const named = LANGUAGE_NAMES[meta.get('language')?.toLowerCase() ?? ''];
  if (named) out.add(named);
  if (voice && /^[a-z]{2,3}(-[a-z0-9]{2,8})*$/.test(voice)) {
    out.add(voice.split('-')[0]!);
    out.add(voice);
  }
  return [...out];
}

/** Speaker names from Piper's own config, when it lies beside the model (`<model>.onnx.json`). */
async function speakerNames(modelFile: string): Promise<Map<number, string>> {
  const names = new Map<number, string>();
  try {
    const config = JSON.parse(await readBounded(`${modelFile}.json`, MAX_JSON_BYTES)) as {
      speaker_id_map?: Record<string, unknown>;
    };
    for (const [name, id] of Object.entries(config.speaker_id_map ?? {}))
      if (typeof id === 'number' && Number.isInteger(id)) names.set(id, name);
  } catch {
    // No config, or not one: speakers go by number.
  }
  return names;
}

async function inspect(config: OnnxModelConfig): Promise<OnnxModelSpec> {
  const dir = resolve(config.path);
  if (!(await isDir(dir))) throw new ModelProblem('it is not a directory');
  const modelFile = await findModelFile(dir, config.model);
  let info: OnnxFileInfo;
  try {
    info = readOnnxInfo(await readFile(modelFile));
  } catch (error) {
    throw new ModelProblem(`${basename(modelFile)} cannot be read: ${(error as Error).message}`);
  }
  checkMetadata(info);
  const meta = info.metadata;
  const family = familyOf(meta.get('comment')!);
  checkInputs(info, family);

  const tokensFile = join(dir, 'tokens.txt');
  if (!(await isFile(tokensFile))) throw new ModelProblem('it has no tokens.txt');
  const dataDir = join(dir, 'espeak-ng-data');
  const lexiconFile = join(dir, 'lexicon.txt');
  let frontend: OnnxFrontend;
  // Its front end skips characters it lacks, and text left with none would crash sherpa-onnx: not
  // guarded (nor tested) here yet.
  if (meta.get('frontend') === 'characters')
    throw new ModelProblem('models whose tokens are characters (frontend: characters) are not supported');
  if (family !== 'vits' && (await isDir(dataDir))) {
    for (const f of ESPEAK_DATA_FILES)
      if (!(await isFile(join(dataDir, f)))) throw new ModelProblem(`its espeak-ng-data has no ${f}`);
    frontend = 'espeak';
  } else if (await isFile(lexiconFile)) frontend = 'lexicon';
  else
    throw new ModelProblem(
      family === 'vits'
        ? 'it has no lexicon.txt (a VITS model that is not Piper’s needs one)'
        : 'it has neither espeak-ng-data/ nor lexicon.txt',
    );
  const tokens = readTokens(await readBounded(tokensFile, MAX_TOKENS_BYTES), frontend === 'espeak');
  if (frontend === 'espeak') {
    for (const s of ['_', ...(family === 'inflect' ? [] : ['^', '$'])])
      if (!tokens.has(s))
        throw new ModelProblem(`tokens.txt has no ${s} (a Piper model's pad, start or end)`);
  } else if (frontend === 'lexicon') {
    if (!tokens.has(' ')) throw new ModelProblem('tokens.txt has no blank (the line " <id>")');
    // The marks its front end looks up (by `at`, which throws past the native boundary) when listed.
    for (const p of (meta.get('punctuation') ?? '').split(' '))
      if (LEXICON_MARKS.includes(p) && !tokens.has(p))
        throw new ModelProblem(`tokens.txt has no ${p}, which the metadata's punctuation lists`);
  }

  const count = atoi(meta.get('n_speakers')!);
  const names = await speakerNames(modelFile);
  let sids = count > 1 ? Array.from({ length: count }, (_, i) => i) : [0];
  if (config.speakers !== undefined) {
    const wrong = config.speakers.filter((s) => !sids.includes(s));
    if (wrong.length > 0)
      throw new ModelProblem(
        `it has no speaker ${wrong.join(', ')} (its speakers are 0 to ${sids.length - 1})`,
      );
    sids = [...new Set(config.speakers)];
  }
  const name = config.name ?? basename(dir);
  const id = modelIdOf(name);
  if (id === '') throw new ModelProblem(`its name ${JSON.stringify(name)} has no letter or digit`);
  return {
    id,
    name,
    dir,
    modelFile,
    tokensFile,
    ...(frontend === 'lexicon' ? { lexiconFile } : {}),
    ...(frontend === 'espeak' ? { dataDir } : {}),
    frontend,
    family,
    sampleRate: atoi(meta.get('sample_rate')!),
    speakers: sids.map((sid) => ({ sid, name: names.get(sid) })),
    languages: languagesOf(meta),
    noiseScale: config.noiseScale ?? DEFAULT_NOISE_SCALE,
    noiseScaleW: config.noiseScaleW ?? DEFAULT_NOISE_SCALE_W,
    lengthScale: config.lengthScale ?? DEFAULT_LENGTH_SCALE,
  };
}

/** Checks every configured model: those that can be loaded, and why the others cannot. */
export async function inspectOnnxModels(
  configs: readonly OnnxModelConfig[],
): Promise<{ models: OnnxModelSpec[]; skipped: OnnxSkipped[] }> {
  const models: OnnxModelSpec[] = [];
  const skipped: OnnxSkipped[] = [];
  for (const config of configs) {
    const what = `ONNX model ${config.path}`;
    try {
      const spec = await inspect(config);
      if (models.some((m) => m.id === spec.id))
        throw new ModelProblem(`another model is named ${spec.id}: give one a "name"`);
      models.push(spec);
    } catch (error) {
      if (!(error instanceof ModelProblem) && (error as NodeJS.ErrnoException).code === undefined)
        throw error;
      skipped.push({ what, reason: (error as Error).message });
    }
  }
  return { models, skipped };
}
