import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Paths whose values are secrets wherever they appear in a log record. Keys must never reach a log,
 * at any level, so redaction is on the logger itself rather than left to each call site.
 */
export const REDACT_PATHS = [
  'apiKey',
  'key',
  'token',
  '*.apiKey',
  '*.key',
  '*.token',
  'headers["xi-api-key"]',
  'headers["serviceplatform-apikey"]',
  'headers.authorization',
  '*.headers["xi-api-key"]',
  '*.headers["serviceplatform-apikey"]',
  '*.headers.authorization',
];

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { name: 'voxbridge' },
  };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}
