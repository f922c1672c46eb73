import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What a service key may do: speak, list voices, add voices. */
export const SCOPES = ['speech', 'voices:read', 'voices:write'] as const;
export type Scope = (typeof SCOPES)[number];

export interface ServiceKey {
  /** A name for logs and the concurrency limit; never the key itself. */
  readonly id: string;
  /**
   * Whose voices the key sees and creates; default `id`. voxbridge's own speaking key shares the owner of
   * SPEECH_API_KEY, so the voices a user adds with that key are the ones calls can speak in.
   */
  readonly owner?: string;
  readonly key: string;
  readonly scopes: readonly Scope[];
  /** Speech requests this key may have in flight; default the service's `maxConcurrentPerKey`. */
  readonly maxConcurrent?: number;
}

export interface Principal {
  readonly id: string;
  readonly owner: string;
  readonly scopes: ReadonlySet<Scope>;
  readonly maxConcurrent: number | undefined;
}

/** The spec's primary header wins when a client sends both (the ElevenLabs SDK always adds xi-api-key). */
export const PRIMARY_KEY_HEADER = 'serviceplatform-apikey';
export const COMPAT_KEY_HEADER = 'xi-api-key';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Keys are compared as SHA-256 digests with `timingSafeEqual`, against every configured key, so neither
 * the length nor the position of a match leaks through timing.
 */
export class KeyRing {
  private readonly entries: Array<{ digest: Buffer; principal: Principal }>;

  constructor(keys: readonly ServiceKey[]) {
    const ids = new Set<string>();
    this.entries = keys.map((k) => {
      if (!k.key) throw new Error(`service key ${k.id} is empty`);
      if (ids.has(k.id)) throw new Error(`service key id ${k.id} is used twice`);
      ids.add(k.id);
      return {
        digest: digest(k.key),
        principal: {
          id: k.id,
          owner: k.owner ?? k.id,
          scopes: new Set(k.scopes),
          maxConcurrent: k.maxConcurrent,
        },
      };
    });
  }

  /** The presented key, or undefined when the request carries none. */
  static presentedKey(req: IncomingMessage): string | undefined {
    const pick = (name: string): string | undefined => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    return pick(PRIMARY_KEY_HEADER) || pick(COMPAT_KEY_HEADER) || undefined;
  }

  authenticate(presented: string): Principal | undefined {
    const d = digest(presented);
    let found: Principal | undefined;
    for (const entry of this.entries) if (timingSafeEqual(entry.digest, d)) found = entry.principal;
    return found;
  }
}
