/**
 * The `DocumentHost` the call-control ports publish to (src/call-control/documents.ts): Plivo fetches
 * its XML, jambonz its verbs, Vonage a summary's NCCO from a URL, so each document is served at
 * `<server.publicUrl>/call-documents/<id>`, the id 192 random bits (the URL is the only credential a
 * gateway brings), to GET and POST alike, for `ttlMs`, at most `maxDocuments` at once. Nothing here is
 * behind the control token: the gateways fetch it.
 */
import { randomBytes } from 'node:crypto';
import type { DocumentHost, HostedDocument } from '../call-control/index.js';
import { pathSegments, sendJson } from '../http/http.js';
import type { Route } from '../http/router.js';

/** The route's prefix under the server (and under `server.publicUrl`). */
export const DOCUMENTS_PREFIX = '/call-documents';
/** A document is written by a port (a few kilobytes); more is a bug, not a document. */
const MAX_DOCUMENT_BYTES = 64 * 1024;
/** What a gateway may send with its fetch (Plivo posts the call's fields): read and dropped. */
const MAX_FETCH_BODY_BYTES = 64 * 1024;

/** Publishing failed: the host is full (or the document too large); the operation needing it fails. */
export class DocumentHostFullError extends Error {
  override readonly name = 'DocumentHostFullError';
}

export interface PublishedDocumentsOptions {
  readonly publicUrl: string;
  readonly ttlMs: number;
  readonly maxDocuments: number;
  /** Milliseconds, monotonic; default performance.now. */
  readonly now?: () => number;
}

export class PublishedDocuments implements DocumentHost {
  /** By id, in the order published (so the oldest expire first). */
  readonly #documents = new Map<string, HostedDocument & { readonly untilMs: number }>();
  readonly #base: string;
  readonly #now: () => number;

  constructor(private readonly options: PublishedDocumentsOptions) {
    this.#base = `${options.publicUrl.replace(/\/+$/, '')}${DOCUMENTS_PREFIX}`;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Documents served now. */
  get size(): number {
    this.prune();
    return this.#documents.size;
  }

  publish(document: HostedDocument): Promise<string> {
    this.prune();
    if (Buffer.byteLength(document.body) > MAX_DOCUMENT_BYTES)
      return Promise.reject(new DocumentHostFullError(`a document over ${MAX_DOCUMENT_BYTES} bytes`));
    if (this.#documents.size >= this.options.maxDocuments)
      return Promise.reject(
        new DocumentHostFullError(
          `${this.#documents.size} documents are served (calls.control.documents.maxDocuments): try again shortly`,
        ),
      );
    const id = randomBytes(24).toString('base64url');
    this.#documents.set(id, { ...document, untilMs: this.#now() + this.options.ttlMs });
    return Promise.resolve(`${this.#base}/${id}`);
  }

  private prune(): void {
    const now = this.#now();
    for (const [id, doc] of this.#documents) {
      if (doc.untilMs > now) break;
      this.#documents.delete(id);
    }
  }

  /** `GET`/`POST /call-documents/<id>`: the document, or 404 (unknown, or expired). */
  route(): Route {
    return {
      prefix: DOCUMENTS_PREFIX,
      handler: async (req, res, path) => {
        const method = req.method ?? 'GET';
        const parts = pathSegments(path);
        if (method !== 'GET' && method !== 'POST') {
          req.resume();
          sendJson(res, 405, { error: 'method not allowed; use GET or POST' }, { allow: 'GET, POST' });
          return true;
        }
        // Plivo posts the call's fields with its fetch: read (bounded) and dropped.
        let read = 0;
        for await (const chunk of req) {
          read += (chunk as Buffer).length;
          if (read > MAX_FETCH_BODY_BYTES) {
            sendJson(res, 413, { error: 'request body too large' });
            return true;
          }
        }
        this.prune();
        const doc = parts?.length === 1 ? this.#documents.get(parts[0]!) : undefined;
        if (!doc) {
          sendJson(res, 404, { error: 'no such document' });
          return true;
        }
        res.writeHead(200, {
          'content-type': doc.contentType,
          'content-length': Buffer.byteLength(doc.body),
          'cache-control': 'no-store',
        });
        res.end(doc.body);
        return true;
      },
    };
  }
}
