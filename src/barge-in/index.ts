export { EnergyGate, type EnergyGateOptions } from './energy-gate.js';
export {
  AMD_DEFAULTS,
  createAnsweringMachineDetector,
  type AmdDecision,
  type AmdEvent,
  type AmdOptions,
  type AmdReason,
  type AmdResult,
  type AnsweringMachineDetector,
  type GreetingWatch,
} from './amd.js';
export type { Tone } from '../audio/tone.js';
export {
  EchoStream,
  SileroModel,
  WASM_FALLBACK_LOG,
  SileroSession,
  SileroStream,
  sileroModelPath,
  NATIVE_ORT_PACKAGE,
  type SileroBackend,
  type SileroSessionOptions,
  type EchoRunner,
  type SileroRunner,
  type VadSampleRate,
} from './silero.js';
export { EchoEstimator, MAX_ECHO_DELAY_MS, REFERENCE_ADVANCE_MS, type EchoVerdict } from './echo.js';
export {
  MAX_LAG_MS,
  MAX_QUEUED_WINDOWS,
  MAX_SPEECH_LEAD_MS,
  SPEECH_RESET_MS,
  inThreadDetectors,
  SpeechOnsetDetector,
  type DetectorOptions,
  type DetectorSource,
  type SpeechDetector,
  type DetectorStats,
  type PushInfo,
  type SpeechOnset,
  type SpeechTurn,
  type TurnSilence,
  type CallerSilence,
} from './detector.js';
export {
  classifyTranscript,
  decideEndOfTurn,
  DEFAULT_ENDPOINTING,
  endpointingConfig,
  endpointingSchema,
  type EndpointCue,
  type EndpointDecision,
  type EndpointingConfig,
  type EndpointingInput,
  type EndpointingOptions,
  type TranscriptEnding,
} from './endpointing.js';
export { startVadWorkers, VadWorkerPool, type VadWorkersOptions } from './pool.js';
export { PooledDetector, VadWorkerError, type DetectorHost, type PushOutcome } from './pooled-detector.js';
