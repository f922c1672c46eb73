export { EnergyGate } from './energy-gate.js';
export { SileroModel, SileroSession, SileroStream, sileroModelPath, type VadSampleRate } from './silero.js';
export {
  MAX_LAG_MS,
  MAX_QUEUED_WINDOWS,
  SpeechOnsetDetector,
  type DetectorOptions,
  type DetectorStats,
  type PushInfo,
  type SpeechOnset,
  type SpeechTurn,
} from './detector.js';
export { startVadWorkers, VadWorkerError, VadWorkerPool, type VadWorkersOptions } from './pool.js';
