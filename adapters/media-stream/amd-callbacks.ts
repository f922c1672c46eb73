/**
 * Where the gateways post their own answering-machine verdicts (`machine_detection` in `POST /calls`
 * without a `callback_url`): each placed call that asks gets `<server.publicUrl>/call-amd/<id>`, the id
 * 192 random bits, open until its call is over or `ttlMs` has passed, at most `maxOpen` at once. The
 * route takes a form POST bounded in bytes, has the gateway's reader (`amd-verdict.ts`)
 * check its signature against the exact URL given and read the verdict, and hands it to the call:
 * 204; an unknown or expired id 404, a bad signature 403, a malformed verdict 400, a body too large
 * 413. Nothing here is behind the control token: the gateway posts it, signed.
 */
import { randomBytes } from 'node:crypto';
import type { AmdVerdictReader, GatewayAmdVerdict } from './amd-verdict.js';
import {
  BodyTooLargeError,
  pathSegments,
  readBody,
  sendJson,
  sendMethodNotAllowed,
} from '../../src/http/http.js';
import type { Route } from '../../src/http/router.js';
import type { GatewayName } from '../../src/protocols/types.js';

/** The route's prefix under the server (and under `server.publicUrl`). */
export const AMD_CALLBACK_PREFIX = '/call-amd';
/** A verdict is a handful of short fields (Twilio's: about 300 bytes). */
export const AMD_CALLBACK_MAX_BODY_BYTES = 8 * 1024;
/**
 * How long after its stream's deadline a callback stays open at most (it closes with its call before):
 * Twilio decides within its `MachineDetectionTimeout` (at most 59 s) of the answer, and a beep's wait.
 */
export const GATEWAY_AMD_WINDOW_MS = 120_000;

interface OpenCallback {
  readonly url: string;
  readonly reader: AmdVerdictReader;
  readonly untilMs: number;
  readonly deliver: (verdict: GatewayAmdVerdict) => void;
}

export interface AmdCallbacksOptions {
  readonly publicUrl: string;
  /** The gateways whose verdicts can be read here. */
  readonly readers: readonly AmdVerdictReader[];
  readonly ttlMs: number;
  readonly maxOpen: number;
  /** Milliseconds, monotonic; default performance.now. */
  readonly now?: () => number;
}

export class AmdCallbacks {
  /** By id, in the order opened (so the oldest expire first). */
  readonly #open = new Map<string, OpenCallback>();
  readonly #readers: ReadonlyMap<GatewayName, AmdVerdictReader>;
  readonly #base: string;
  readonly #now: () => number;

  constructor(private readonly options: AmdCallbacksOptions) {
    this.#readers = new Map(options.readers.map((r) => [r.gateway, r]));
    this.#base = `${options.publicUrl.replace(/\/+$/, '')}${AMD_CALLBACK_PREFIX}`;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Whether this gateway's verdicts can be received here. */
  reads(gateway: GatewayName): boolean {
    return this.#readers.has(gateway);
  }

  /** Callbacks open now. */
  get size(): number {
    this.prune();
    return this.#open.size;
  }

  /**
   * A callback URL for one call's verdict, handed to `deliver` when it comes; undefined when the
   * gateway has no reader here or `maxOpen` are open. `close` it once the call is over.
   */
  open(
    gateway: GatewayName,
    deliver: (verdict: GatewayAmdVerdict) => void,
  ): { id: string; url: string } | undefined {
    this.prune();
    const reader = this.#readers.get(gateway);
    if (!reader || this.#open.size >= this.options.maxOpen) return undefined;
    const id = randomBytes(24).toString('base64url');
    const url = `${this.#base}/${id}`;
    this.#open.set(id, { url, reader, deliver, untilMs: this.#now() + this.options.ttlMs });
    return { id, url };
  }

  close(id: string): void {
    this.#open.delete(id);
  }

  private prune(): void {
    const now = this.#now();
    for (const [id, open] of this.#open) {
      if (open.untilMs > now) break;
      this.#open.delete(id);
    }
  }

  /** `POST /call-amd/<id>`: a gateway's verdict. */
  route(): Route {
    return {
      prefix: AMD_CALLBACK_PREFIX,
      handler: async (req, res, path) => {
        if (req.method !== 'POST') {
          req.resume();
          return sendMethodNotAllowed(res, 'POST');
        }
        let body: Buffer;
        try {
          body = await readBody(req, AMD_CALLBACK_MAX_BODY_BYTES);
        } catch (error) {
          if (!(error instanceof BodyTooLargeError)) throw error;
          sendJson(res, 413, { error: error.message });
          return true;
        }
        this.prune();
        const parts = pathSegments(path);
        const id = parts?.length === 1 ? parts[0]! : undefined;
        const open = id === undefined ? undefined : this.#open.get(id);
        if (!open) {
          sendJson(res, 404, { error: 'no such callback' });
          return true;
        }
        const read = open.reader.read({
          url: open.url,
          headers: req.headers,
          contentType: req.headers['content-type'],
          body,
        });
        if (!read.ok) {
          sendJson(res, read.status, { error: read.reason });
          return true;
        }
        // One verdict a call: the callback closes with it (a repeat is 404).
        this.#open.delete(id!);
        open.deliver(read.verdict);
        res.writeHead(204).end();
        return true;
      },
    };
  }
}
