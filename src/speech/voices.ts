/**
 * The two voice endpoints as the client sees them: `GET /v2/voices` (query in snake_case, answer mapped
 * to camelCase) and `POST /v1/voices/add` (multipart). Inputs are checked before anything is sent.
 */
import { Blob } from 'node:buffer';
import { FormData } from 'undici';
import { SpeechInputError, SpeechServiceError } from './errors.js';

export const VOICE_SORTS = ['created_at_unix', 'name'] as const;
export const SORT_DIRECTIONS = ['asc', 'desc'] as const;
export const PAGE_SIZE_MAX = 100;

export interface Voice {
  voiceId: string;
  name: string;
  /** `cloned`, `premade`, …; `unknown` when the service did not say. */
  category: string;
  labels: Record<string, string>;
  description?: string;
  createdAtUnix?: number;
}

export interface ListVoicesQuery {
  pageSize?: number;
  nextPageToken?: string;
  search?: string;
  sort?: (typeof VOICE_SORTS)[number];
  sortDirection?: (typeof SORT_DIRECTIONS)[number];
  voiceType?: string;
  category?: string;
  includeTotalCount?: boolean;
}

export interface VoicesPage {
  voices: Voice[];
  hasMore: boolean;
  totalCount: number;
  nextPageToken?: string;
}

export interface AddVoiceFile {
  data: Uint8Array | Blob;
  filename: string;
  contentType?: string;
}

export interface AddVoiceInput {
  name: string;
  files: AddVoiceFile[];
  description?: string;
  labels?: Record<string, string>;
  removeBackgroundNoise?: boolean;
}

export interface AddedVoice {
  voiceId: string;
  requiresVerification: boolean;
}

function includes<T extends string>(list: readonly T[], value: unknown): value is T {
  return typeof value === 'string' && (list as readonly string[]).includes(value);
}

/** The query string of `GET /v2/voices` (with its leading `?`, or empty). */
export function voicesQueryString(q: ListVoicesQuery = {}): string {
  const params = new URLSearchParams();
  if (q.pageSize !== undefined) {
    if (!Number.isInteger(q.pageSize) || q.pageSize < 1 || q.pageSize > PAGE_SIZE_MAX)
      throw new SpeechInputError('page_size', `page_size must be an integer from 1 to ${PAGE_SIZE_MAX}`);
    params.set('page_size', String(q.pageSize));
  }
  const strings = [
    ['next_page_token', q.nextPageToken],
    ['search', q.search],
    ['voice_type', q.voiceType],
    ['category', q.category],
  ] as const;
  for (const [name, value] of strings) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new SpeechInputError(name, `${name} must be a string`);
    params.set(name, value);
  }
  if (q.sort !== undefined) {
    if (!includes(VOICE_SORTS, q.sort))
      throw new SpeechInputError('sort', `sort must be one of ${VOICE_SORTS.join(', ')}`);
    params.set('sort', q.sort);
  }
  if (q.sortDirection !== undefined) {
    if (!includes(SORT_DIRECTIONS, q.sortDirection))
      throw new SpeechInputError('sort_direction', 'sort_direction must be asc or desc');
    params.set('sort_direction', q.sortDirection);
  }
  if (q.includeTotalCount !== undefined) {
    if (typeof q.includeTotalCount !== 'boolean')
      throw new SpeechInputError('include_total_count', 'include_total_count must be a boolean');
    params.set('include_total_count', String(q.includeTotalCount));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function invalid(what: string, requestId: string | undefined): SpeechServiceError {
  return new SpeechServiceError({
    code: 'invalid_response',
    message: `the speech service answered with ${what}`,
    requestId,
    retryable: false,
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function toVoice(raw: unknown, requestId: string | undefined): Voice {
  if (!isRecord(raw) || typeof raw['voice_id'] !== 'string' || raw['voice_id'] === '')
    throw invalid('a voice without a voice_id', requestId);
  const labels: Record<string, string> = {};
  if (isRecord(raw['labels']))
    for (const [key, value] of Object.entries(raw['labels']))
      if (typeof value === 'string') labels[key] = value;
  const voice: Voice = {
    voiceId: raw['voice_id'],
    name: typeof raw['name'] === 'string' ? raw['name'] : '',
    category: typeof raw['category'] === 'string' ? raw['category'] : 'unknown',
    labels,
  };
  if (typeof raw['description'] === 'string') voice.description = raw['description'];
  if (typeof raw['created_at_unix'] === 'number') voice.createdAtUnix = raw['created_at_unix'];
  return voice;
}

export function toVoicesPage(json: unknown, requestId: string | undefined): VoicesPage {
  if (!isRecord(json) || !Array.isArray(json['voices']))
    throw invalid('a voice list without voices', requestId);
  const voices = json['voices'].map((raw) => toVoice(raw, requestId));
  const page: VoicesPage = {
    voices,
    hasMore: json['has_more'] === true,
    totalCount: typeof json['total_count'] === 'number' ? json['total_count'] : voices.length,
  };
  const token = json['next_page_token'];
  if (typeof token === 'string' && token !== '') page.nextPageToken = token;
  return page;
}

/** Checks `input` and builds the multipart body of `POST /v1/voices/add`. */
export function addVoiceForm(input: AddVoiceInput): FormData {
  if (typeof input !== 'object' || input === null)
    throw new SpeechInputError('body', 'the input must be an object');
  if (typeof input.name !== 'string' || input.name.trim() === '')
    throw new SpeechInputError('name', 'name must be a non-empty string');
  if (!Array.isArray(input.files) || input.files.length === 0)
    throw new SpeechInputError('files', 'files must hold at least one audio sample');
  if (input.description !== undefined && typeof input.description !== 'string')
    throw new SpeechInputError('description', 'description must be a string');
  if (input.labels !== undefined) {
    if (!isRecord(input.labels) || Object.values(input.labels).some((v) => typeof v !== 'string'))
      throw new SpeechInputError('labels', 'labels must map names to strings');
  }
  if (input.removeBackgroundNoise !== undefined && typeof input.removeBackgroundNoise !== 'boolean')
    throw new SpeechInputError('remove_background_noise', 'remove_background_noise must be a boolean');

  const form = new FormData();
  form.append('name', input.name);
  input.files.forEach((file, i) => {
    if (
      typeof file !== 'object' ||
      file === null ||
      typeof file.filename !== 'string' ||
      file.filename === ''
    )
      throw new SpeechInputError('files', `files[${i}] needs a filename`);
    const { data, contentType } = file;
    let blob: Blob;
    if (data instanceof Blob) {
      blob =
        contentType !== undefined && contentType !== data.type
          ? new Blob([data], { type: contentType })
          : data;
    } else if (data instanceof Uint8Array) {
      blob = new Blob([data], { type: contentType ?? 'application/octet-stream' });
    } else {
      throw new SpeechInputError('files', `files[${i}].data must be a Uint8Array or a Blob`);
    }
    if (blob.size === 0) throw new SpeechInputError('files', `files[${i}] is empty`);
    form.append('files', blob, file.filename);
  });
  if (input.description !== undefined) form.append('description', input.description);
  if (input.labels !== undefined) form.append('labels', JSON.stringify(input.labels));
  if (input.removeBackgroundNoise !== undefined)
    form.append('remove_background_noise', String(input.removeBackgroundNoise));
  return form;
}

export function toAddedVoice(json: unknown, requestId: string | undefined): AddedVoice {
  if (!isRecord(json) || typeof json['voice_id'] !== 'string' || json['voice_id'] === '')
    throw invalid('a new voice without a voice_id', requestId);
  return { voiceId: json['voice_id'], requiresVerification: json['requires_verification'] === true };
}
