/**
 * The rates barge-in's detectors run at: Silero VAD v5's two (silero.ts), which the echo estimator
 * (echo.ts) and the detector share. Other rates are resampled to 16 kHz before they get here.
 */
export type VadSampleRate = 8000 | 16_000;
