import { pino, type Logger } from 'pino';
import { CREDENTIAL_VARIABLES, OPTIONAL_VARIABLES } from '../call-control/index.js';

export type { Logger };

/**
 * The gateways' call-control credentials by their variables' names (`TWILIO_AUTH_TOKEN`, …): the ports
 * scrub their values from what they log; these keep a record that holds them by name from any line.
 */
const CALL_CONTROL_KEYS = [...Object.values(CREDENTIAL_VARIABLES), ...Object.values(OPTIONAL_VARIABLES)]
  .flat()
  .flatMap((name) => [name, `*.${name}`]);

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
  ...CALL_CONTROL_KEYS,
];

/**
 * JSON lines (one per event), or colourised lines when stdout is a terminal and no destination is
 * given (`LOG_FORMAT=json` keeps JSON in a terminal too). Redaction applies to both.
 */
export function createLogger(
  level: string,
  destination?: NodeJS.WritableStream,
  pretty: boolean = !destination && process.stdout.isTTY === true && process.env['LOG_FORMAT'] !== 'json',
): Logger {
  const options = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { name: 'voxbridge' },
  };
  if (destination) return pino(options, destination as pino.DestinationStream);
  if (pretty)
    return pino(
      options,
      pino.transport({ target: 'pino-pretty', options: { colorize: true, translateTime: 'HH:MM:ss.l' } }),
    );
  return pino(options);
}
