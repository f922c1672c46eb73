/**
 * Secrets for fakes and tests, made afresh for each run: nothing shaped like a key or a token is
 * written in the repository, and a value can reach a log or an answer only by a leak the tests look for.
 */
import { randomBytes } from 'node:crypto';

/** A secret of the given label, random for this run (`<label>-<24 hex digits>`). */
export function fakeSecret(label: string): string {
  return `${label}-${randomBytes(12).toString('hex')}`;
}
