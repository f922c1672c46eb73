import type { IncomingMessage, ServerResponse } from 'node:http';
import busboy from 'busboy';
import type { Logger } from 'pino';
import { sendJson } from '../app/http.js';
import type { Principal } from './auth.js';
import { badRequest, ServiceHttpError } from './http-errors.js';
import { analyzeSamples } from './voices/analyze-samples.js';
import { UnsupportedSampleError } from './voices/decode.js';
import { deriveEngineParams } from './voices/params.js';
import type { StoredVoice, VoiceStore } from './voices/store.js';

export interface VoiceLimits {
  readonly maxFiles: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
}

export interface VoicesRouteDeps {
  readonly voices: VoiceStore;
  readonly limits: VoiceLimits;
  readonly logger: Logger;
}

const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 10;
const MAX_NAME_CHARS = 100;
const MAX_FIELD_BYTES = 64 * 1024;

/** The public shape of a voice (owner and engine parameters stay inside). */
function voiceJson(v: StoredVoice): Record<string, unknown> {
  return {
    voice_id: v.voice_id,
    name: v.name,
    category: v.category,
    description: v.description,
    labels: v.labels,
    created_at_unix: v.created_at_unix,
    samples: v.samples.map((s) => ({ ...s })),
    settings: null,
    preview_url: null,
    available_for_tiers: [],
    high_quality_base_model_ids: [],
    is_owner: v.owner !== null,
  };
}

function enumParam<T extends string>(
  url: URL,
  name: string,
  allowed: readonly T[],
  fallback: T | undefined,
): T | undefined {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return fallback;
  if (!(allowed as readonly string[]).includes(v))
    throw badRequest(`${name} must be one of ${allowed.join(', ')}`, name);
  return v as T;
}

function boolParam(url: URL, name: string, fallback: boolean): boolean {
  const v = url.searchParams.get(name);
  if (v === null || v === '') return fallback;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw badRequest(`${name} must be true or false`, name);
}

/** Page tokens are opaque to clients; here they carry the offset of the next page. */
const encodeToken = (offset: number): string => Buffer.from(`o:${offset}`).toString('base64url');
function decodeToken(token: string): number {
  const m = /^o:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!m) throw badRequest('next_page_token is not a token this service issued', 'next_page_token');
  return Number(m[1]);
}

/** GET /v2/voices */
export function handleListVoices(
  deps: VoicesRouteDeps,
  res: ServerResponse,
  url: URL,
  principal: Principal,
  requestId: string,
): void {
  const sizeParam = url.searchParams.get('page_size');
  const pageSize = sizeParam === null ? DEFAULT_PAGE_SIZE : Number(sizeParam);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE)
    throw badRequest(`page_size must be an integer from 1 to ${MAX_PAGE_SIZE}`, 'page_size');
  const sort = enumParam(url, 'sort', ['created_at_unix', 'name'] as const, 'created_at_unix')!;
  const direction = enumParam(
    url,
    'sort_direction',
    ['asc', 'desc'] as const,
    sort === 'name' ? 'asc' : 'desc',
  )!;
  const voiceType = enumParam(
    url,
    'voice_type',
    ['personal', 'community', 'default', 'workspace', 'non-default', 'saved'] as const,
    undefined,
  );
  const category = enumParam(
    url,
    'category',
    ['premade', 'cloned', 'generated', 'professional'] as const,
    undefined,
  );
  const includeTotal = boolParam(url, 'include_total_count', true);
  const token = url.searchParams.get('next_page_token');
  const offset = token ? decodeToken(token) : 0;
  const search = url.searchParams.get('search')?.trim().toLowerCase();

  let list = deps.voices.visibleTo(principal.id);
  if (search)
    list = list.filter((v) =>
      [v.name, v.description ?? '', ...Object.values(v.labels)].some((s) => s.toLowerCase().includes(search)),
    );
  if (category) list = list.filter((v) => v.category === category);
  if (voiceType === 'default') list = list.filter((v) => v.owner === null);
  else if (voiceType === 'personal' || voiceType === 'non-default' || voiceType === 'workspace')
    list = list.filter((v) => v.owner !== null);
  else if (voiceType === 'community' || voiceType === 'saved') list = [];
  const sign = direction === 'asc' ? 1 : -1;
  list.sort((a, b) => {
    const primary = sort === 'name' ? a.name.localeCompare(b.name) : a.created_at_unix - b.created_at_unix;
    return sign * (primary || a.voice_id.localeCompare(b.voice_id));
  });
  const page = list.slice(offset, offset + pageSize);
  const hasMore = offset + pageSize < list.length;
  sendJson(
    res,
    200,
    {
      voices: page.map(voiceJson),
      has_more: hasMore,
      total_count: includeTotal ? list.length : page.length,
      next_page_token: hasMore ? encodeToken(offset + pageSize) : null,
    },
    { 'request-id': requestId },
  );
}

interface Upload {
  fields: Map<string, string>;
  files: Array<{ fileName: string; mimeType: string; data: Buffer }>;
}

function readMultipart(req: IncomingMessage, limits: VoiceLimits): Promise<Upload> {
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('multipart/form-data'))
    return Promise.reject(badRequest('body must be multipart/form-data', 'body'));
  return new Promise((resolve, reject) => {
    const upload: Upload = { fields: new Map(), files: [] };
    let total = 0;
    let failed: ServiceHttpError | undefined;
    const fail = (e: ServiceHttpError): void => {
      failed ??= e;
      req.unpipe(parser);
      req.resume();
      reject(failed);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        limits: {
          files: limits.maxFiles,
          fileSize: limits.maxFileBytes,
          fields: 32,
          fieldSize: MAX_FIELD_BYTES,
        },
      });
    } catch (error) {
      reject(badRequest(`malformed multipart body: ${(error as Error).message}`, 'body'));
      return;
    }
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(badRequest(`field ${name} is too long`, name));
      else upload.fields.set(name, value);
    });
    parser.on('file', (name, stream, info) => {
      if (name !== 'files') {
        stream.resume();
        fail(badRequest(`unexpected file field ${name}; samples go in "files"`, name));
        return;
      }
      const parts: Buffer[] = [];
      let size = 0;
      stream.on('data', (d: Buffer) => {
        size += d.length;
        total += d.length;
        if (total > limits.maxTotalBytes)
          fail(badRequest(`samples exceed ${limits.maxTotalBytes} bytes in all`, 'files', 'file_too_large'));
        else parts.push(d);
      });
      stream.on('limit', () =>
        fail(
          badRequest(`file ${info.filename} exceeds ${limits.maxFileBytes} bytes`, 'files', 'file_too_large'),
        ),
      );
      stream.on('end', () => {
        if (!failed)
          upload.files.push({
            fileName: info.filename || 'sample',
            mimeType: info.mimeType,
            data: Buffer.concat(parts, size),
          });
      });
    });
    parser.on('filesLimit', () =>
      fail(badRequest(`at most ${limits.maxFiles} files may be sent`, 'files', 'too_many_files')),
    );
    parser.on('error', (error: Error) =>
      fail(badRequest(`malformed multipart body: ${error.message}`, 'body')),
    );
    parser.on('close', () => {
      if (!failed) resolve(upload);
    });
    req.pipe(parser);
  });
}

function parseLabels(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest('labels must be a JSON object of strings', 'labels');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw badRequest('labels must be a JSON object of strings', 'labels');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'string') throw badRequest(`labels.${k} must be a string`, 'labels');
    out[k] = v;
  }
  return out;
}

/** POST /v1/voices/add */
export async function handleAddVoice(
  deps: VoicesRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
  principal: Principal,
  requestId: string,
): Promise<void> {
  const upload = await readMultipart(req, deps.limits);
  const name = upload.fields.get('name')?.trim();
  if (!name) throw badRequest('name is required', 'name');
  if (name.length > MAX_NAME_CHARS)
    throw badRequest(`name is longer than ${MAX_NAME_CHARS} characters`, 'name');
  if (upload.files.length === 0)
    throw badRequest('at least one audio sample is required in "files"', 'files');
  const labels = parseLabels(upload.fields.get('labels'));
  let analyses;
  try {
    analyses = await analyzeSamples(upload.files);
  } catch (error) {
    if (error instanceof UnsupportedSampleError) throw badRequest(error.message, 'files', 'invalid_audio');
    throw error;
  }
  const engine = deriveEngineParams(analyses);
  const voice = await deps.voices.add({
    name,
    owner: principal.id,
    description: upload.fields.get('description') || null,
    labels,
    engine,
    files: upload.files,
  });
  deps.logger.info({ requestId, voiceId: voice.voice_id, owner: principal.id, engine }, 'voice added');
  sendJson(res, 200, { voice_id: voice.voice_id, requires_verification: false }, { 'request-id': requestId });
}
