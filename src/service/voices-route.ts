import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { sendJson } from '../http/http.js';
import type { Principal } from './auth.js';
import { badRequest, ServiceHttpError } from './http-errors.js';
import type { ConcurrencyLimiter } from './limiter.js';
import { analyzeSamples } from './voices/analyze-samples.js';
import { UnsupportedSampleError } from './voices/decode.js';
import { LANGUAGE_CODE, type EngineCatalog } from './voices/language.js';
import { deriveVoiceParams, type VoiceEngines } from './voices/params.js';
import { VoiceStoreFullError, type StoredVoice, type VoiceStore } from './voices/store.js';
import { receiveUpload, storeFull, type UploadLimits } from './voices/upload.js';

export interface VoiceLimits extends UploadLimits {
  /** Uploads received or analysed at once, all keys together. */
  readonly maxConcurrentUploads: number;
  /** Bytes of samples the store may hold. */
  readonly maxStoreBytes: number;
}

export interface VoicesRouteDeps {
  readonly voices: VoiceStore;
  /** Which engines are here: a voice whose `language` label is not English is made on eSpeak-NG. */
  readonly engines: EngineCatalog;
  readonly limits: VoiceLimits;
  /** Uploads in progress, counted under one key: the bound is the machine's, not a client's. */
  readonly uploads: ConcurrencyLimiter;
  readonly logger: Logger;
}

const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 10;
const MAX_NAME_CHARS = 100;
const UPLOADS_KEY = 'uploads';
/** An upload takes seconds (receiving, then analysing in a worker): retry after a few. */
const UPLOAD_RETRY_AFTER_SECONDS = 5;

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

  let list = deps.voices.visibleTo(principal.owner);
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
  // Refused before a byte of the body is read: each upload costs disk, a worker thread and its memory.
  const release = deps.uploads.tryAcquire(UPLOADS_KEY, deps.limits.maxConcurrentUploads);
  if (!release)
    throw new ServiceHttpError(
      429,
      'concurrent_limit_exceeded',
      `${deps.limits.maxConcurrentUploads} voice uploads are in progress; try again shortly`,
      undefined,
      UPLOAD_RETRY_AFTER_SECONDS,
    );
  // The answer (this one, or an error's) goes out once the upload's files and slot are given back, so
  // a client that uploads again right after it is not refused for its own previous upload.
  let voice: StoredVoice;
  try {
    const upload = await receiveUpload(req, deps.voices, deps.limits);
    try {
      voice = await addVoice(deps, upload.fields, upload.files, principal);
    } finally {
      await upload.dispose();
    }
  } finally {
    release();
  }
  deps.logger.info(
    { requestId, voiceId: voice.voice_id, owner: principal.owner, engine: voice.engine },
    'voice added',
  );
  sendJson(res, 200, { voice_id: voice.voice_id, requires_verification: false }, { 'request-id': requestId });
}

/**
 * A voice speaks Flite's English unless its `language` label names a language Flite lacks and eSpeak
 * has: then it is an eSpeak voice in that language (same pitch and pace either way).
 */
function voiceEngines(
  derived: VoiceEngines,
  language: string | undefined,
  engines: EngineCatalog,
): VoiceEngines {
  if (
    language === undefined ||
    !LANGUAGE_CODE.test(language) ||
    /^en(-|$)/i.test(language) ||
    !derived.espeak
  )
    return derived;
  const espeakLanguage = engines.has('espeak-ng') ? engines.espeakLanguage(language) : undefined;
  if (espeakLanguage === undefined) return derived;
  const espeak = { ...derived.espeak, language: espeakLanguage };
  return { engine: espeak, espeak };
}

async function addVoice(
  deps: VoicesRouteDeps,
  fields: ReadonlyMap<string, string>,
  files: Awaited<ReturnType<typeof receiveUpload>>['files'],
  principal: Principal,
): Promise<StoredVoice> {
  const name = fields.get('name')?.trim();
  if (!name) throw badRequest('name is required', 'name');
  if (name.length > MAX_NAME_CHARS)
    throw badRequest(`name is longer than ${MAX_NAME_CHARS} characters`, 'name');
  if (files.length === 0) throw badRequest('at least one audio sample is required in "files"', 'files');
  const labels = parseLabels(fields.get('labels'));
  let analyses;
  try {
    analyses = await analyzeSamples(files);
  } catch (error) {
    if (error instanceof UnsupportedSampleError) throw badRequest(error.message, 'files', 'invalid_audio');
    throw error;
  }
  const engines = voiceEngines(deriveVoiceParams(analyses), labels['language'], deps.engines);
  try {
    return await deps.voices.add({
      name,
      owner: principal.owner,
      description: fields.get('description') || null,
      labels,
      engine: engines.engine,
      espeak: engines.espeak,
      files,
    });
  } catch (error) {
    if (error instanceof VoiceStoreFullError) throw storeFull(deps.voices);
    throw error;
  }
}
