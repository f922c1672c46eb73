export { EnergyGate, levelDbfs } from './energy-gate.js';
export { SileroModel, SileroStream, type VadSampleRate } from './silero.js';
export { SpeechOnsetDetector, type DetectorOptions, type SpeechOnset } from './detector.js';
