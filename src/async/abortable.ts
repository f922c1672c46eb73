/**
 * A promise raced against an abort signal: settles as `promise` does, or rejects with `signal.reason`
 * as soon as the signal aborts (at once when it already has). The promise itself is left running; its
 * own rejection, should it come after the abort, is not left unhandled.
 */
export function orAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  promise.catch(() => undefined);
  let onAbort = (): void => undefined;
  // Settles only on abort; when the promise settles first its listener is removed.
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}
