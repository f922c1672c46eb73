/**
 * The local speech service under hostile or unlucky input (issue 14): bodies cut short, clients that
 * walk away, too many fields, too many uploads at once, a full store, whole bodies too large for
 * memory. Each test talks to the real service over loopback.
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_VOICE_ID } from '../../src/service/voices/builtin.js';
import { KEYS, NO_PHONE_BARGE_IN, startTestApp, type TestApp } from '../helpers/app.js';
import { espeakSpeech, wavFile } from '../../testkit/audio.js';

const BOUNDARY = 'voxbridge-test-boundary';

type Part = { name: string; value: string } | { name: string; filename: string; data: Buffer };

function partHead(p: Part): string {
  return 'filename' in p
    ? `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\n` +
        'Content-Type: audio/wav\r\n\r\n'
    : `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n`;
}

/** A complete multipart body. */
function multipart(parts: Part[]): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    chunks.push(Buffer.from(partHead(p)));
    chunks.push('filename' in p ? p.data : Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

async function upload(api: string, body: Buffer, key: string = KEYS.main): Promise<Response> {
  return fetch(`${api}/v1/voices/add`, {
    method: 'POST',
    headers: { 'xi-api-key': key, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
    body,
  });
}

interface ErrorDetail {
  code: string;
  param?: string;
  message: string;
  request_id: string;
  status: string;
}

async function errorOf(res: Response): Promise<ErrorDetail> {
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as { detail: ErrorDetail };
  expect(body.detail.request_id).toBe(res.headers.get('request-id'));
  expect(body.detail.status).toBe(body.detail.code);
  return body.detail;
}

/**
 * An upload whose headers promise `declaredBytes` of body, of which only `sent` go out: the request stays
 * open (a slow client) until the socket is destroyed. `response` collects whatever the server answers.
 */
async function heldUpload(
  url: string,
  sent: Buffer,
  declaredBytes: number,
): Promise<{ socket: Socket; response: () => string }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => {});
  socket.write(
    `POST /api/speech/v1/voices/add HTTP/1.1\r\nHost: ${hostname}:${port}\r\nxi-api-key: ${KEYS.main}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${declaredBytes}\r\n\r\n`,
  );
  socket.write(sent);
  return { socket, response: () => received };
}

async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Upload staging directories (and files in them) under DATA_DIR/voices. */
async function staged(dataDir: string): Promise<Array<{ path: string; size: number }>> {
  const voices = join(dataDir, 'voices');
  const out: Array<{ path: string; size: number }> = [];
  for (const dir of (await readdir(voices)).filter((n) => n.startsWith('.tmp-'))) {
    for (const file of await readdir(join(voices, dir)).catch(() => [])) {
      const path = join(voices, dir, file);
      const size = await stat(path).then(
        (s) => s.size,
        () => -1,
      );
      out.push({ path, size });
    }
    out.push({ path: join(voices, dir), size: 0 });
  }
  return out;
}

async function serves(t: TestApp): Promise<void> {
  const res = await fetch(`${t.api}/v2/voices`, { headers: { 'xi-api-key': KEYS.main } });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/**
 * In production an error nobody listens for ends the process. Here the app runs inside the test runner,
 * which catches it and carries on, so the tests watch for such errors themselves.
 */
const uncaught: unknown[] = [];
const onUncaught = (error: unknown): void => {
  uncaught.push(error);
};
beforeAll(() => {
  process.on('uncaughtExceptionMonitor', onUncaught);
});
afterAll(() => {
  process.off('uncaughtExceptionMonitor', onUncaught);
});

let sample: Buffer;
beforeAll(async () => {
  sample = wavFile(
    await espeakSpeech('Every sample needs a few seconds of clear speech, spoken evenly.', 'en-us+m3', 30),
    22_050,
  );
});

describe('uploads cut short', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ ...NO_PHONE_BARGE_IN, service: { voices: { maxConcurrentUploads: 1 } } });
  });
  afterAll(async () => {
    await t.close();
  });

  const truncated = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="a.wav"\r\n\r\nRIFF`,
  );

  it('a body that ends inside a file part is 400 invalid_parameters, and the server serves on', async () => {
    const res = await upload(t.api, truncated);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_parameters');
    await serves(t);
    expect(await staged(t.dataDir)).toEqual([]);
    expect(uncaught).toEqual([]);
  });

  it('a chunked body that ends inside a file part: the same', async () => {
    const { hostname, port } = new URL(t.url);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: hostname,
          port,
          method: 'POST',
          path: '/api/speech/v1/voices/add',
          headers: {
            'xi-api-key': KEYS.main,
            'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
            'transfer-encoding': 'chunked',
          },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write(truncated);
      req.write(sample.subarray(4, 20_000));
      req.end();
    });
    expect(answer.status).toBe(400);
    expect((JSON.parse(answer.body) as { detail: ErrorDetail }).detail.code).toBe('invalid_parameters');
    await serves(t);
    expect(await staged(t.dataDir)).toEqual([]);
    expect(uncaught).toEqual([]);
  });

  it('a client that goes away mid-file: its staged file is removed, its upload slot freed', async () => {
    const head = Buffer.from(partHead({ name: 'files', filename: 'a.wav', data: sample }));
    const held = await heldUpload(t.url, Buffer.concat([head, sample.subarray(0, 50_000)]), 1_000_000);
    // The file is on disk as it arrives.
    await until('the upload is staged on disk', async () =>
      (await staged(t.dataDir)).some((f) => f.size >= 50_000),
    );
    held.socket.destroy();
    await until('the staged upload is removed', async () => (await staged(t.dataDir)).length === 0);
    expect(t.app.service!.voices.bytes.reserved).toBe(0);
    // With one upload at a time allowed, the next one is only accepted if the slot was given back.
    const res = await upload(
      t.api,
      multipart([
        { name: 'name', value: 'After the abort' },
        { name: 'files', filename: 'a.wav', data: sample },
      ]),
    );
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(uncaught).toEqual([]);
  });
});

describe('upload limits', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      ...NO_PHONE_BARGE_IN,
      service: { voices: { maxConcurrentUploads: 2, maxStoreBytes: Math.floor(sample.length * 1.5) } },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('more than 32 form fields is 400, not fields silently dropped; 32 are fine', async () => {
    const fields = (n: number): Part[] =>
      Array.from({ length: n }, (_, i) => ({ name: `extra${i}`, value: 'x' }));
    const over = await upload(
      t.api,
      multipart([
        ...fields(32),
        { name: 'name', value: 'Too many fields' },
        { name: 'files', filename: 'a.wav', data: sample },
      ]),
    );
    expect(over.status).toBe(400);
    expect(await errorOf(over)).toMatchObject({ code: 'invalid_parameters', param: 'body' });
    expect(await staged(t.dataDir)).toEqual([]);
    const at = await upload(
      t.api,
      multipart([
        ...fields(31),
        { name: 'name', value: 'Enough fields' },
        { name: 'files', filename: 'a.wav', data: sample },
      ]),
    );
    expect(at.status).toBe(200);
    await at.arrayBuffer();
  });

  it('past maxConcurrentUploads an upload is 429 concurrent_limit_exceeded with Retry-After', async () => {
    const head = Buffer.from(partHead({ name: 'files', filename: 'a.wav', data: sample }));
    const held = await Promise.all(
      [1, 2].map(() => heldUpload(t.url, Buffer.concat([head, sample.subarray(0, 1000)]), 10_000_000)),
    );
    try {
      await until('both uploads are staged', async () => (await staged(t.dataDir)).length >= 4);
      const refused = await upload(
        t.api,
        multipart([
          { name: 'name', value: 'Third' },
          { name: 'files', filename: 'a.wav', data: sample },
        ]),
      );
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await errorOf(refused)).code).toBe('concurrent_limit_exceeded');
    } finally {
      for (const h of held) h.socket.destroy();
    }
    await until('the held uploads are cleaned up', async () => (await staged(t.dataDir)).length === 0);
  });

  it('a full store is 507 voice_storage_full, and the refused upload leaves nothing behind', async () => {
    // The earlier test stored one sample; the bound is 1.5 samples.
    const res = await upload(
      t.api,
      multipart([
        { name: 'name', value: 'No room' },
        { name: 'files', filename: 'a.wav', data: sample },
      ]),
    );
    expect(res.status).toBe(507);
    expect((await errorOf(res)).code).toBe('voice_storage_full');
    expect(await staged(t.dataDir)).toEqual([]);
    expect(t.app.service!.voices.bytes).toEqual({ used: sample.length, reserved: 0 });
    await serves(t);
  });
});

describe('speech requests', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      service: { maxConcurrentPerKey: 2, internalMaxConcurrent: 3 },
      calls: { maxCalls: 5 },
    });
  });
  afterAll(async () => {
    await t.close();
  });

  const speak = (
    text: string,
    opts: { stream?: boolean; key?: string; format?: string } = {},
  ): Promise<Response> =>
    fetch(
      `${t.api}/v1/text-to-speech/${BUILT_IN_VOICE_ID}${opts.stream ? '/stream' : ''}?output_format=${opts.format ?? 'pcm_24000'}`,
      {
        method: 'POST',
        headers: { 'xi-api-key': opts.key ?? KEYS.main, 'content-type': 'application/json' },
        body: JSON.stringify({ text }),
      },
    );

  it('whitespace-only text is 400 invalid_parameters, not max_character_limit_exceeded', async () => {
    for (const text of [' ', '\n\t  \n', '\u3000']) {
      const res = await speak(text);
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({ code: 'invalid_parameters', param: 'text' });
    }
  });

  it('a whole body too large for memory is streamed as it is produced; a short one keeps Content-Length', async () => {
    // About 60 s of audio: 2.8 MB, well past the 1 MiB a response may hold in memory.
    const text = 'This long sentence makes a body larger than the memory allowance. '.repeat(14);
    const service = t.app.service!;
    const res = await speak(text, { format: 'wav_24000' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    const reader = res.body!.getReader();
    const first = await reader.read();
    const completedAtFirstByte = service.engineStats.completed;
    const parts = [Buffer.from(first.value)];
    for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(Buffer.from(r.value));
    const body = Buffer.concat(parts);
    // The engine finished more of the text after the first bytes were out: it was not held to the end.
    expect(service.engineStats.completed).toBeGreaterThan(completedAtFirstByte);
    expect(body.length).toBeGreaterThan(2 * 1024 * 1024);
    // One body: a streamed WAV's header (placeholder sizes), then every sample.
    expect(body.subarray(0, 4).toString('latin1')).toBe('RIFF');
    expect(body.readUInt32LE(40)).toBe(0xffffffff);
    expect((body.length - 44) % 2).toBe(0);

    const short = await speak('A short answer.', { format: 'wav_24000' });
    const shortBody = Buffer.from(await short.arrayBuffer());
    expect(Number(short.headers.get('content-length'))).toBe(shortBody.length);
    expect(shortBody.readUInt32LE(40)).toBe(shortBody.length - 44);
  });

  it("every key a person holds, SPEECH_API_KEY included, gets maxConcurrentPerKey; voxbridge's own speaking its own allowance", async () => {
    const text = 'A long text keeps this stream open for a while. '.repeat(60);
    const held = await Promise.all([
      speak(text, { stream: true }),
      speak(text, { stream: true }),
      speak(text, { stream: true, key: KEYS.other }),
      speak(text, { stream: true, key: KEYS.other }),
    ]);
    const own: Array<Awaited<ReturnType<typeof t.app.client.stream>>> = [];
    try {
      for (const r of held) expect(r.status).toBe(200);
      // SPEECH_API_KEY is at the documented limit (it was 1000 before).
      const mainRefused = await speak('Hi.');
      expect(mainRefused.status).toBe(429);
      expect((await errorOf(mainRefused)).code).toBe('concurrent_limit_exceeded');
      const otherRefused = await speak('Hi.', { key: KEYS.other });
      expect(otherRefused.status).toBe(429);
      await otherRefused.arrayBuffer();
      // voxbridge's own client (its calls and guilds) is not held up by what users do with their keys,
      // and has its own bound: internalMaxConcurrent (3).
      for (let i = 0; i < 3; i++)
        own.push(await t.app.client.stream({ voiceId: BUILT_IN_VOICE_ID, text, outputFormat: 'pcm_24000' }));
      await expect(
        t.app.client.synthesize({ voiceId: BUILT_IN_VOICE_ID, text: 'Hi.', outputFormat: 'pcm_24000' }),
      ).rejects.toMatchObject({ code: 'concurrent_limit_exceeded' });
    } finally {
      await Promise.all(held.map((r) => r.body!.cancel()));
      for (const s of own) s.cancel();
    }
  });
});
