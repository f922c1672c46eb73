import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Init, { type ESpeakNGWorker } from '@echogarden/espeak-ng-emscripten';
import { concatInt16 } from '../src/audio/pcm.js';
import { resampleWhole } from '../src/audio/resampler.js';
import { OUTPUT_SAMPLE_RATE, type WordTiming } from '../src/service/engine/engine.js';
import type { FliteVoiceParams } from '../src/service/engine/voice-params.js';
import { FliteEngine } from '../src/service/engine/flite/engine.js';
import { BUILT_IN_VOICE_ID, builtInVoices } from '../src/service/voices/builtin.js';
import { escapeSsml } from '../src/service/engine/espeak/ssml.js';
import { WordMarks } from '../src/service/engine/espeak/word-marks.js';

const run = promisify(execFile);

let engine: Promise<ESpeakNGWorker> | undefined;

/**
 * Reference speech straight from the engine (22 050 Hz), e.g. to upload as a voice sample. `range`
 * (pitch range, 0–99) is set only when given, as the local service sets it for its cast's voices.
 */
export async function espeakSpeech(
  text: string,
  voice: string,
  pitch: number,
  rateWpm = 175,
  range?: number,
): Promise<Int16Array> {
  engine ??= Init().then((m) => new m.eSpeakNGWorker());
  const w = await engine;
  w.set_voice(voice);
  w.pitch = pitch;
  w.rate = rateWpm;
  if (range !== undefined) w.range = range;
  const parts: Int16Array[] = [];
  w.synthesize(text, (s) => {
    parts.push(s.slice());
    return false;
  });
  return concatInt16(parts);
}

let flite: Promise<FliteEngine> | undefined;

/**
 * Flite's speech in one of the built-in voices' settings (src/service/voices/builtin.ts), at the
 * engine's own level and the service's rate (24 000 Hz), as the local service speaks it before the speaker
 * resamples it: e.g. the default voice's echo, which is quieter than eSpeak's and never silent.
 */
async function fliteSpeech(text: string, voice: FliteVoiceParams): Promise<Int16Array> {
  flite ??= FliteEngine.load();
  const engine = await flite;
  engine.prepare();
  const parts: Int16Array[] = [];
  engine.synthesize(text, voice, false, {
    audio: (samples) => parts.push(samples.slice()) > 0,
    words: () => undefined,
  });
  return concatInt16(parts);
}

/**
 * The default voice's speech (`voxbridge-default`, Flite) at its own level: what `npm start` speaks, at
 * the service's rate (24 000 Hz) or resampled to `sampleRate`.
 */
export async function defaultVoiceSpeech(text: string, sampleRate = OUTPUT_SAMPLE_RATE): Promise<Int16Array> {
  const voice = builtInVoices().find((v) => v.voice_id === BUILT_IN_VOICE_ID)!.engine;
  if (voice.engine !== 'flite') throw new Error(`the default voice is not Flite's but ${voice.engine}'s`);
  const speech = await fliteSpeech(text, voice);
  return sampleRate === OUTPUT_SAMPLE_RATE ? speech : resampleWhole(speech, OUTPUT_SAMPLE_RATE, sampleRate);
}

/**
 * Speech straight from the engine (22 050 Hz) with when each word is spoken, read from eSpeak's events
 * as the local service reads them for its character timings (src/service/engine/word-marks.ts).
 */
export async function espeakTimedSpeech(
  text: string,
  voice: string,
  pitch: number,
  rateWpm = 175,
): Promise<{ samples: Int16Array; words: WordTiming[] }> {
  engine ??= Init().then((m) => new m.eSpeakNGWorker());
  const w = await engine;
  w.set_voice(voice);
  w.pitch = pitch;
  w.rate = rateWpm;
  const marks = new WordMarks(text, 22_050);
  const parts: Int16Array[] = [];
  const words: WordTiming[] = [];
  w.synthesize(escapeSsml(text), (s, events) => {
    parts.push(s.slice());
    words.push(...marks.push(s, events));
    return false;
  });
  words.push(...marks.end());
  return { samples: concatInt16(parts), words };
}

/** A 16-bit WAV file of `samples`: the one writer, src/audio/wav.ts's. */
export { wavFile } from '../src/audio/wav.js';

export interface ProbeResult {
  codec: string;
  sampleRate: number;
  channels: number;
  /** Seconds of audio ffmpeg decodes from the file (not the header's claim). */
  decodedSeconds: number;
}

/** Decodes a file with Debian's ffmpeg, an independent decoder, and reports what it found. */
export async function probeWithFfmpeg(path: string): Promise<ProbeResult> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'a:0',
    '-show_entries',
    'stream=codec_name,sample_rate,channels',
    '-of',
    'json',
    path,
  ]);
  const stream = (
    JSON.parse(stdout) as { streams: Array<{ codec_name: string; sample_rate: string; channels: number }> }
  ).streams[0]!;
  const sampleRate = Number(stream.sample_rate);
  const { stdout: raw } = await run('ffmpeg', ['-v', 'error', '-i', path, '-f', 's16le', '-ac', '1', '-'], {
    encoding: 'buffer',
    maxBuffer: 512 * 1024 * 1024,
  });
  return {
    codec: stream.codec_name,
    sampleRate,
    channels: stream.channels,
    decodedSeconds: raw.length / 2 / sampleRate,
  };
}
