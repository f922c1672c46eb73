import busboy from 'busboy';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SpeechServiceError } from '../../../src/speech/errors.js';
import { KEY, loopbackClients, patternBytes, type Handler } from './loopback.js';

const loopback = loopbackClients({ retryBaseDelayMs: 1 });

function sendJson(res: Parameters<Handler>[1], body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'rid-voices' });
  res.end(text);
}

interface Multipart {
  fields: Array<[string, string]>;
  files: Array<{ field: string; filename: string | undefined; mimeType: string; data: Buffer }>;
}

function parseMultipart(headers: IncomingHttpHeaders, body: Buffer): Promise<Multipart> {
  return new Promise((resolve, reject) => {
    const out: Multipart = { fields: [], files: [] };
    const bb = busboy({ headers });
    bb.on('field', (name, value) => out.fields.push([name, value]));
    bb.on('file', (field, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (c: Buffer) => parts.push(c));
      stream.on('end', () =>
        out.files.push({
          field,
          filename: info.filename,
          mimeType: info.mimeType,
          data: Buffer.concat(parts),
        }),
      );
    });
    bb.on('close', () => resolve(out));
    bb.on('error', reject);
    bb.end(body);
  });
}

describe('listVoices', () => {
  it('sends the query in snake_case and maps the answer to camelCase', async () => {
    const c = await loopback.setup((_req, res) =>
      sendJson(res, {
        voices: [
          {
            voice_id: 'abc',
            name: 'Ann',
            category: 'cloned',
            labels: { accent: 'irish', weird: 3 },
            description: 'warm',
            created_at_unix: 1_700_000_000,
            preview_url: null,
          },
          { voice_id: 'def', name: 'Bob', category: 'premade', labels: {}, description: null },
        ],
        has_more: true,
        total_count: 12,
        next_page_token: 'tok-2',
      }),
    );
    const page = await c.listVoices({
      pageSize: 2,
      nextPageToken: 'tok-1',
      search: 'a b',
      sort: 'created_at_unix',
      sortDirection: 'desc',
      voiceType: 'personal',
      category: 'cloned',
      includeTotalCount: true,
    });
    const req = loopback.server.requests[0]!;
    expect(req.method).toBe('GET');
    expect(req.path).toBe('/api/speech/v2/voices');
    expect(Object.fromEntries(req.query)).toEqual({
      page_size: '2',
      next_page_token: 'tok-1',
      search: 'a b',
      sort: 'created_at_unix',
      sort_direction: 'desc',
      voice_type: 'personal',
      category: 'cloned',
      include_total_count: 'true',
    });
    expect(req.headers['serviceplatform-apikey']).toBe(KEY);
    expect(page).toEqual({
      voices: [
        {
          voiceId: 'abc',
          name: 'Ann',
          category: 'cloned',
          labels: { accent: 'irish' },
          description: 'warm',
          createdAtUnix: 1_700_000_000,
        },
        { voiceId: 'def', name: 'Bob', category: 'premade', labels: {} },
      ],
      hasMore: true,
      totalCount: 12,
      nextPageToken: 'tok-2',
    });
  });

  it('sends no query string without a query, and fills missing totals', async () => {
    const c = await loopback.setup((_req, res) =>
      sendJson(res, { voices: [{ voice_id: 'x' }], next_page_token: null }),
    );
    const page = await c.listVoices();
    expect(loopback.server.requests[0]!.url).toBe('/api/speech/v2/voices');
    expect(page).toEqual({
      voices: [{ voiceId: 'x', name: '', category: 'unknown', labels: {} }],
      hasMore: false,
      totalCount: 1,
    });
  });

  it('rejects a malformed answer with invalid_response', async () => {
    const c = await loopback.setup((_req, res) => sendJson(res, { voices: [{ name: 'no id' }] }));
    await expect(c.listVoices()).rejects.toMatchObject({ code: 'invalid_response', requestId: 'rid-voices' });
  });

  it('rejects a body that is not JSON', async () => {
    const c = await loopback.setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"voices": [');
    });
    const error = await c.listVoices().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpeechServiceError);
    expect(error).toMatchObject({ code: 'invalid_response', status: 200 });
  });

  it('is retried like speech (GET is idempotent)', async () => {
    const c = await loopback.setup((_req, res, { index }) => {
      if (index === 0) {
        res.writeHead(500);
        res.end();
        return;
      }
      sendJson(res, { voices: [], has_more: false, total_count: 0 });
    });
    await expect(c.listVoices()).resolves.toEqual({ voices: [], hasMore: false, totalCount: 0 });
    expect(loopback.server.requests).toHaveLength(2);
  });
});

describe('addVoice', () => {
  it('posts multipart: name, repeated files, description, labels as JSON, remove_background_noise', async () => {
    let parsed: Multipart | undefined;
    const sample = patternBytes(3000);
    const c = await loopback.setup(async (req, res, { body }) => {
      parsed = await parseMultipart(req.headers, body);
      sendJson(res, { voice_id: 'new-voice', requires_verification: true });
    });
    const result = await c.addVoice({
      name: 'Ann',
      files: [
        { data: sample, filename: 'one.wav', contentType: 'audio/wav' },
        { data: new Blob([patternBytes(10, 5)], { type: 'audio/mpeg' }), filename: 'two.mp3' },
      ],
      description: 'Warm and calm',
      labels: { accent: 'irish', age: 'young' },
      removeBackgroundNoise: true,
    });
    expect(result).toEqual({ voiceId: 'new-voice', requiresVerification: true });
    const req = loopback.server.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/api/speech/v1/voices/add');
    expect(req.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(req.headers['serviceplatform-apikey']).toBe(KEY);
    expect(parsed!.fields).toEqual([
      ['name', 'Ann'],
      ['description', 'Warm and calm'],
      ['labels', JSON.stringify({ accent: 'irish', age: 'young' })],
      ['remove_background_noise', 'true'],
    ]);
    expect(parsed!.files.map((f) => [f.field, f.filename, f.mimeType, f.data.byteLength])).toEqual([
      ['files', 'one.wav', 'audio/wav', 3000],
      ['files', 'two.mp3', 'audio/mpeg', 10],
    ]);
    expect(parsed!.files[0]!.data).toEqual(sample);
    expect(parsed!.files[1]!.data).toEqual(patternBytes(10, 5));
  });

  it('sends only the fields that are set, and reads requires_verification', async () => {
    let parsed: Multipart | undefined;
    const c = await loopback.setup(async (req, res, { body }) => {
      parsed = await parseMultipart(req.headers, body);
      sendJson(res, { voice_id: 'v2' });
    });
    const sub = patternBytes(20).subarray(4, 12); // a view with a byteOffset: only its bytes are sent
    await expect(c.addVoice({ name: 'Bob', files: [{ data: sub, filename: 'b.wav' }] })).resolves.toEqual({
      voiceId: 'v2',
      requiresVerification: false,
    });
    expect(parsed!.fields).toEqual([['name', 'Bob']]);
    expect(parsed!.files[0]!.data).toEqual(Buffer.from(sub));
  });
});
