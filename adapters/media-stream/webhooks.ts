/** A flow's webhook: every event of the call, POSTed as it happens. */
import type { Logger } from 'pino';
import { postJson } from '../../src/flows/runner.js';
import { toWire, type CallEvent } from './call-events.js';

/** Sends a JSON body; resolves with the HTTP status, or rejects. */
export type PostJson = (url: string, body: unknown, signal: AbortSignal) => Promise<number>;

/** A webhook that has not answered by then is given up on: the call does not wait for it anyway. */
export const WEBHOOK_TIMEOUT_MS = 3000;

/**
 * Posts `event` to `url` in its wire shape, best effort: a slow or failing webhook never holds the
 * call, it is only logged. Never rejects.
 */
export function postEvent(url: string, event: CallEvent, options: { post?: PostJson; log: Logger }): void {
  const { log } = options;
  const post = options.post ?? postJson;
  post(url, toWire(event), AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)).then(
    (status) => {
      if (status >= 300) log.warn({ url, status, event: event.type }, 'webhook answered with an error');
    },
    (error: unknown) => log.warn({ url, err: (error as Error).message, event: event.type }, 'webhook failed'),
  );
}
