/** The speech client as the CLI uses it, and what its errors mean to someone at a terminal. */
import { redactUrl } from '../speech/base-url.js';
import { SpeechClient } from '../speech/client.js';
import { SpeechInputError, SpeechServiceError } from '../speech/errors.js';
import { CliError, UsageError, type ServiceTarget } from './args.js';

export function openClient(target: ServiceTarget): SpeechClient {
  // The prefix is part of the target's URL already.
  return new SpeechClient({ baseUrl: target.baseUrl, pathPrefix: '', apiKey: target.apiKey, maxRetries: 1 });
}

function transportCode(error: SpeechServiceError): string | undefined {
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * A speech client's failure as the CLI reports it: bad input is a usage error; a service that is not
 * there says how to get one; an answer from the service keeps its status, code and message.
 */
export function explainSpeechError(error: unknown, target: ServiceTarget, command: string): unknown {
  if (error instanceof SpeechInputError) return new UsageError(error.message, command);
  if (!(error instanceof SpeechServiceError)) return error;
  if (error.status === undefined) {
    const code = transportCode(error);
    if (code === 'ECONNREFUSED')
      return new CliError(
        `no speech service at ${redactUrl(target.baseUrl)}: start one with \`npm start\` or set SPEECH_BASE_URL`,
      );
    if (error.code === 'connection_failed' || error.code === 'request_failed')
      return new CliError(
        `cannot reach the speech service at ${redactUrl(target.baseUrl)}: ${error.message}`,
      );
    return new CliError(error.message);
  }
  if (error.status === 401)
    return new CliError(
      `${error.message}\n${target.apiKey === '' ? 'No key was given: set' : 'Check'} SPEECH_API_KEY (or --key).`,
    );
  if (error.status === 403) return new CliError(`${error.message}\nThe key lacks the permission this needs.`);
  return new CliError(error.message);
}
