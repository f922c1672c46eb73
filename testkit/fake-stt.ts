/**
 * (Just over 400 lines: one protocol peer, whose request checks, faults and records share each
 * request's state.)
 *
 * A fake ElevenLabs-compatible speech-to-text service on loopback, speaking `POST
 * {prefix}/v1/speech-to-text` over real HTTP: the key checked in `xi-api-key` or
 * `ServicePlatform-APIKey` (the latter wins when both come, as in the local service), the multipart
 * body read with busboy (as the local service reads uploads), `model_id` required and known, and the
 * `file` read as a WAV by the project's reader (RIFF header, rate, channels, bits, samples). The answer
 * is ElevenLabs' shape, its text chosen by the test's `transcribe` (default: a fixed sentence), its
 * words spread over the audio.
 *
 * Each request is recorded (headers without the key, the fields, the WAV as received, what was
 * answered, whether the client went away first). `failNext(n, fault)` makes the next n valid requests
 * fail: a status (429 with `Retry-After`, 500, …), a hang until the client gives up, a dropped
 * connection, or a 200 whose body is not JSON. A wrong key's 401 quotes the key back, as some servers
 * do, so tests can check the client scrubs it.
 */
import { sendJson } from '../src/http/http.js';
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';
import { parseWav, WavFormatError } from '../src/audio/wav.js';
import { fakeSecret } from './secrets.js';

export const FAKE_STT_PATH = '/v1/speech-to-text';
export const FAKE_STT_KEY = fakeSecret('fake-stt-key');
export const DEFAULT_FAKE_TRANSCRIPT = 'Hello from the fake transcriber.';
export const FAKE_STT_MODELS: readonly string[] = ['scribe_v1', 'scribe_v1_experimental', 'scribe_v2'];
const MAX_FIELDS = 16;
const MAX_FIELD_BYTES = 4096;
const DEFAULT_MAX_FILE_BYTES = 32 * 1024 * 1024;
/** The share of a word's slot it is spoken in; the rest is the spacing before the next word. */
const WORD_SHARE = 0.8;

/** The uploaded file as the fake read it. */
export interface ReceivedWav {
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: number;
  readonly sampleRate: number;
  readonly channels: number;
  readonly bitsPerSample: number;
  /** Frames in the file (a frame is one sample of every channel). */
  readonly frames: number;
  readonly durationMs: number;
  /** Mono mixdown, -1..1. */
  readonly samples: Float32Array;
}

/** What `transcribe` is given. */
export interface SttRequest {
  /** 0-based position among all requests the fake received. */
  readonly index: number;
  readonly modelId: string;
  readonly languageCode: string | undefined;
  readonly wav: ReceivedWav;
}

/**
 * A string: that text, answered as ElevenLabs would (see `fakeTranscript`). `{ json }`: that value as
 * the JSON body, whatever it is. `{ body, contentType }`: those bytes.
 */
export type SttAnswer =
  string | { readonly json: unknown } | { readonly body: string | Uint8Array; readonly contentType: string };

export type SttFault =
  /** An error answer in ElevenLabs' shape; `retryAfter` is the header's value as written. */
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly retryAfter?: string;
      readonly code?: string;
      readonly message?: string;
    }
  /** No answer until the client closes the connection. */
  | { readonly kind: 'hang' }
  /** The connection destroyed without an answer. */
  | { readonly kind: 'drop' }
  /** 200, `application/json`, a body that does not parse. */
  | { readonly kind: 'invalid-json' };

export interface SttRecord {
  readonly method: string;
  readonly path: string;
  /** As received, without `xi-api-key` and `serviceplatform-apikey`. */
  readonly headers: IncomingHttpHeaders;
  /** The header that carried a key (right or wrong), the one checked when both came. */
  readonly keyHeader: 'ServicePlatform-APIKey' | 'xi-api-key' | undefined;
  readonly authorized: boolean;
  /** `performance.now()` when the request arrived. */
  readonly receivedAt: number;
  /** Text fields of the form. */
  fields: Record<string, string>;
  modelId: string | undefined;
  languageCode: string | undefined;
  wav: ReceivedWav | undefined;
  /** The fault this request was given, if any. */
  fault: SttFault['kind'] | undefined;
  /** The status answered; `undefined` for a hang or a drop. */
  status: number | undefined;
  /** The client closed the connection before the answer was complete. */
  closedEarly: boolean;
}

export interface FakeSttOptions {
  /** The key accepted. Default `FAKE_STT_KEY`. */
  apiKey?: string;
  /** In front of `/v1/speech-to-text`, e.g. `/proxy/stt`. Default `''`. */
  pathPrefix?: string;
  /** The text or body to answer a valid request with. Default: `DEFAULT_FAKE_TRANSCRIPT`. */
  transcribe?: (request: SttRequest) => SttAnswer | Promise<SttAnswer>;
  /** `model_id`s accepted; others get 400 `model_not_found`. Default `FAKE_STT_MODELS`. */
  models?: readonly string[];
  /** A larger file gets 413. Default 32 MiB. */
  maxFileBytes?: number;
}

/**
 * `text` as ElevenLabs answers it: each word in an equal slot of the audio (spoken in its first 80 %),
 * `spacing` entries between words, times in seconds to the millisecond.
 */
export function fakeTranscript(
  text: string,
  durationMs: number,
  languageCode = 'eng',
): Record<string, unknown> {
  const tokens = text.split(/\s+/).filter((t) => t !== '');
  const slotS = durationMs / 1000 / Math.max(1, tokens.length);
  const s = (seconds: number): number => Math.round(seconds * 1000) / 1000;
  const words: Array<Record<string, unknown>> = [];
  tokens.forEach((token, i) => {
    if (i > 0)
      words.push({
        text: ' ',
        start: s((i - 1 + WORD_SHARE) * slotS),
        end: s(i * slotS),
        type: 'spacing',
        logprob: 0,
      });
    words.push({
      text: token,
      start: s(i * slotS),
      end: s((i + WORD_SHARE) * slotS),
      type: 'word',
      logprob: 0,
    });
  });
  return { language_code: languageCode, language_probability: 0.98, text, words };
}

function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { detail: { status: code, message } }, headers);
}

const STATUS_CODES: Readonly<Record<number, string>> = {
  429: 'too_many_concurrent_requests',
  500: 'internal_server_error',
  503: 'service_unavailable',
};

class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Form {
  fields: Record<string, string>;
  file: { filename: string; contentType: string; data: Buffer } | undefined;
}

/** The whole multipart body, bounded; a `RequestError` for anything malformed or too large. */
function readForm(req: IncomingMessage, maxFileBytes: number): Promise<Form> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: { files: 1, fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, fileSize: maxFileBytes },
      });
    } catch (error) {
      reject(
        new RequestError(400, 'invalid_parameters', `body must be multipart/form-data: ${String(error)}`),
      );
      return;
    }
    const form: Form = { fields: {}, file: undefined };
    let failure: RequestError | undefined;
    const fail = (error: RequestError): void => {
      failure ??= error;
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new RequestError(400, 'invalid_parameters', `field ${name} is too long`));
      else form.fields[name] = value;
    });
    parser.on('fieldsLimit', () => fail(new RequestError(400, 'invalid_parameters', 'too many form fields')));
    parser.on('filesLimit', () => fail(new RequestError(400, 'invalid_parameters', 'send exactly one file')));
    parser.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => parts.push(chunk));
      stream.on('limit', () =>
        fail(new RequestError(413, 'file_too_large', `the file is larger than ${maxFileBytes} bytes`)),
      );
      stream.on('end', () => {
        if (name !== 'file')
          fail(new RequestError(400, 'invalid_parameters', `unexpected file field ${name}`));
        else
          form.file = {
            filename: info.filename ?? '',
            contentType: info.mimeType,
            data: Buffer.concat(parts),
          };
      });
    });
    parser.on('error', (error: Error) =>
      reject(new RequestError(400, 'invalid_parameters', `malformed multipart body: ${error.message}`)),
    );
    parser.on('close', () => (failure ? reject(failure) : resolve(form)));
    req.on('error', (error) => reject(new RequestError(400, 'invalid_parameters', error.message)));
    req.pipe(parser);
  });
}

function keyOf(headers: IncomingHttpHeaders): { header: SttRecord['keyHeader']; key: string | undefined } {
  const platform = headers['serviceplatform-apikey'];
  if (typeof platform === 'string') return { header: 'ServicePlatform-APIKey', key: platform };
  const xi = headers['xi-api-key'];
  if (typeof xi === 'string') return { header: 'xi-api-key', key: xi };
  return { header: undefined, key: undefined };
}

export class FakeStt {
  readonly requests: SttRecord[] = [];
  readonly apiKey: string;
  readonly #server: Server;
  readonly #path: string;
  readonly #transcribe: (request: SttRequest) => SttAnswer | Promise<SttAnswer>;
  readonly #models: readonly string[];
  readonly #maxFileBytes: number;
  readonly #faults: SttFault[] = [];

  private constructor(server: Server, options: FakeSttOptions) {
    this.#server = server;
    this.apiKey = options.apiKey ?? FAKE_STT_KEY;
    this.#path = (options.pathPrefix ?? '').replace(/\/+$/, '') + FAKE_STT_PATH;
    this.#transcribe = options.transcribe ?? (() => DEFAULT_FAKE_TRANSCRIPT);
    this.#models = options.models ?? FAKE_STT_MODELS;
    this.#maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.#handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) sendError(res, 500, 'internal_server_error', String(error));
        else res.destroy();
      });
    });
  }

  static async start(options: FakeSttOptions = {}): Promise<FakeStt> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new FakeStt(server, options);
  }

  /** `http://127.0.0.1:port`: the client's `baseUrl` when the fake has no prefix. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The next `count` valid requests (right key, path and form) get `fault` instead of an answer. */
  failNext(count: number, fault: SttFault): void {
    for (let i = 0; i < count; i++) this.#faults.push(fault);
  }

  async waitFor(predicate: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!predicate()) {
      if (performance.now() > deadline) throw new Error(`fake STT: no ${what} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const headers = { ...req.headers };
    delete headers['xi-api-key'];
    delete headers['serviceplatform-apikey'];
    const { header, key } = keyOf(req.headers);
    const record: SttRecord = {
      method: req.method ?? '',
      path: new URL(req.url ?? '/', 'http://localhost').pathname,
      headers,
      keyHeader: header,
      authorized: key === this.apiKey,
      receivedAt: performance.now(),
      fields: {},
      modelId: undefined,
      languageCode: undefined,
      wav: undefined,
      fault: undefined,
      status: undefined,
      closedEarly: false,
    };
    const index = this.requests.length;
    this.requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished && record.fault !== 'drop') record.closedEarly = true;
    });
    const answerError = (
      status: number,
      code: string,
      message: string,
      extra?: Record<string, string>,
    ): void => {
      record.status = status;
      sendError(res, status, code, message, extra);
    };

    if (record.path !== this.#path || record.method !== 'POST') {
      req.resume();
      await once(req, 'end');
      answerError(404, 'not_found', `no ${record.method} ${record.path} here`);
      return;
    }
    if (!record.authorized) {
      req.resume();
      await once(req, 'end');
      answerError(401, 'invalid_api_key', key === undefined ? 'Missing API key' : `Invalid API key "${key}"`);
      return;
    }
    let form: Form;
    try {
      form = await readForm(req, this.#maxFileBytes);
    } catch (error) {
      if (!(error instanceof RequestError)) throw error;
      req.resume();
      answerError(error.status, error.code, error.message);
      return;
    }
    record.fields = form.fields;
    record.modelId = form.fields['model_id'];
    record.languageCode = form.fields['language_code'];
    if (record.modelId === undefined) return answerError(400, 'invalid_parameters', 'model_id is required');
    if (!this.#models.includes(record.modelId))
      return answerError(400, 'model_not_found', `unknown model_id "${record.modelId}"`);
    if (form.file === undefined) return answerError(400, 'invalid_parameters', 'file is required');
    let wav: ReceivedWav;
    try {
      const parsed = parseWav(form.file.data);
      wav = {
        filename: form.file.filename,
        contentType: form.file.contentType,
        bytes: form.file.data.byteLength,
        sampleRate: parsed.sampleRate,
        channels: parsed.channels,
        bitsPerSample: parsed.bitsPerSample,
        frames: parsed.samples.length,
        durationMs: (parsed.samples.length / parsed.sampleRate) * 1000,
        samples: parsed.samples,
      };
    } catch (error) {
      if (!(error instanceof WavFormatError)) throw error;
      return answerError(400, 'invalid_audio', `the file is not a WAV this fake reads: ${error.message}`);
    }
    record.wav = wav;

    const fault = this.#faults.shift();
    record.fault = fault?.kind;
    switch (fault?.kind) {
      case 'status':
        return answerError(
          fault.status,
          fault.code ?? STATUS_CODES[fault.status] ?? `error_${fault.status}`,
          fault.message ?? `injected ${fault.status}`,
          fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter },
        );
      case 'hang':
        return; // answered by nobody: the record says when the client closed
      case 'drop':
        req.socket.destroy();
        return;
      case 'invalid-json':
        record.status = 200;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"text": "cut off');
        return;
      case undefined:
        break;
    }

    const answer = await this.#transcribe({
      index,
      modelId: record.modelId,
      languageCode: record.languageCode,
      wav,
    });
    record.status = 200;
    if (typeof answer === 'string')
      sendJson(res, 200, fakeTranscript(answer, wav.durationMs, record.languageCode ?? 'eng'));
    else if ('json' in answer) sendJson(res, 200, answer.json);
    else {
      res.writeHead(200, {
        'content-type': answer.contentType,
        'content-length': Buffer.byteLength(answer.body),
      });
      res.end(answer.body);
    }
  }
}
