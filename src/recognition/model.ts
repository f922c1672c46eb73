/**
 * Where soundswallower's US English model is, and how a decoder is set up for it: shared by the grammar
 * (its dictionary says which words can be said) and the worker threads (each loads the model once).
 *
 * The model is CMU Sphinx's `en-us-ptm-8khz` (its README.txt): a phone-band model (filterbank 130 to
 * 3700 Hz). Decoding 8 kHz audio as it is, and the same audio upsampled to 16 kHz with `samprate
 * 16000`, gave the same accuracy and the same CPU (on a development menu of 126 eSpeak answers through
 * μ-law: 113 vs 112 right clean, 117 vs 116 at 20 dB SNR), so everything is decoded at 8 kHz: a phone
 * call's audio needs no resampling, and 16 kHz audio is halved.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The package's directory (its `exports` hide package.json, so from its main module). */
const PACKAGE_DIR = dirname(createRequire(import.meta.url).resolve('soundswallower'));

/** Absolute paths: the module resolves relative ones against the process's cwd. */
export const MODEL_DIR = join(PACKAGE_DIR, 'model', 'en-us');
export const DICTIONARY_PATH = join(MODEL_DIR, 'dict.txt');

export const DECODER_SAMPLE_RATE = 8000;
/** Frames of the model's features per second (10 ms each): the unit of its segment times. */
export const FRAMES_PER_SECOND = 100;
