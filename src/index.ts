/**
 * voxbridge as a library. The core never loads the embedded engines (Flite, and eSpeak-NG, which is
 * GPL-3.0): the local speech service is reachable only through `voxbridge`'s own process, or by
 * importing `src/service` explicitly.
 */
export { SpeechClient } from './speech/client.js';
export type {
  CharacterAlignment,
  SpeechClientOptions,
  SpeechRequest,
  SpeechStream,
} from './speech/client.js';
export { SttClient, DEFAULT_STT_MODEL_ID } from './speech/stt.js';
export type { SttClientOptions, TranscribeOptions, Transcript, TranscriptWord } from './speech/stt.js';
export { SpeechServiceError, SpeechInputError, isRetryableStatus } from './speech/errors.js';
export { OUTPUT_FORMATS, FORMAT_INFO, DEFAULT_OUTPUT_FORMAT, type OutputFormat } from './speech/formats.js';
export { TEXT_MAX_CHARS, VOICE_SETTING_RANGES, DEFAULT_MODEL_ID } from './speech/limits.js';
export { Resampler, type ResamplerOptions } from './audio/resampler.js';
export { PcmAligner } from './audio/pcm.js';
export { wavFile } from './audio/wav.js';
export { Speaker } from './speaker/speaker.js';
export type {
  SpeakerOptions,
  SayOptions,
  UtteranceResult,
  UtteranceHandle,
  InterruptResult,
} from './speaker/speaker.js';
export type { AudioSink, SinkFrame } from './speaker/sink.js';
export type { WireFormat, WireEncoding } from './audio/framer.js';
export type { Clock } from './speaker/clock.js';
export { systemClock } from './speaker/clock.js';
export { PlayoutClock } from './speaker/playout-clock.js';
export { PhraseCache } from './speaker/phrase-cache.js';
export { parseScript, ScriptError, type Cast, type CastMember, type ScriptLine } from './speaker/script.js';
