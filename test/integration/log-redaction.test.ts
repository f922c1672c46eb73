/**
 * Secrets never reach the log, at any level: the app runs at trace level with every secret set and is
 * used the way clients use it (speech with both key headers, the control API's bearer token, a
 * gateway connecting with the media token in its query and its path, wrong keys), and the whole log
 * is searched for every secret. A second app, in remote mode, speaks through the first with
 * credentials in its SPEECH_BASE_URL (issue 14, finding 8: they were logged in the ready line).
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type App } from '../../src/app/app.js';
import { loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/app/logger.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

const SECRETS = {
  SPEECH_API_KEY: 'secret-speech-key-7f3a9c2e5b1d',
  CONTROL_TOKEN: 'secret-control-token-4e8b2a6c',
  MEDIA_STREAM_TOKEN: 'secret-media-token-9d1f3b7a',
  DISCORD_TOKEN: 'MTAwMDAwMDAwMDAwMDAwMDAx.GsecrT.discord-secret-token-5c2e8a',
};
/** The password of the remote app's SPEECH_BASE_URL (`http://bob:<it>@…`). */
const BASE_URL_PASSWORD = randomBytes(12).toString('hex');

let app: App;
let remote: App;
let dir: string;
let log = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'voxbridge-redaction-'));
  const out = new PassThrough();
  out.on('data', (d: Buffer) => (log += d.toString()));
  // No IVR flow: calls only say what the control API asks.
  const overlay = join(dir, 'config.json');
  await writeFile(overlay, JSON.stringify({ calls: { defaultFlow: null } }));
  const loaded = loadConfig({
    VOXBRIDGE_CONFIG: overlay,
    PORT: '0',
    DATA_DIR: dir,
    LOG_LEVEL: 'trace',
    ...SECRETS,
  });
  app = await startApp(loaded, { logger: createLogger('trace', out) });
  remote = await startApp(
    loadConfig({
      VOXBRIDGE_CONFIG: overlay,
      PORT: '0',
      DATA_DIR: join(dir, 'remote'),
      LOG_LEVEL: 'trace',
      SPEECH_BASE_URL: app.url.replace('://', `://bob:${BASE_URL_PASSWORD}@`),
      SPEECH_API_KEY: SECRETS.SPEECH_API_KEY,
      CONTROL_TOKEN: SECRETS.CONTROL_TOKEN,
      MEDIA_STREAM_TOKEN: SECRETS.MEDIA_STREAM_TOKEN,
    }),
    { logger: createLogger('trace', out) },
  );
});
afterAll(async () => {
  await remote?.close();
  await app.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the log', () => {
  it('carries no key or token at trace level, whatever the requests carried', async () => {
    const api = `${app.url}/api/speech`;
    const speech = (headers: Record<string, string>): Promise<Response> =>
      fetch(`${api}/v1/text-to-speech/voxbridge-default/stream?output_format=pcm_24000`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ text: 'A secret is safe here.' }),
      });
    expect((await speech({ 'xi-api-key': SECRETS.SPEECH_API_KEY })).status).toBe(200);
    expect((await speech({ 'ServicePlatform-APIKey': SECRETS.SPEECH_API_KEY })).status).toBe(200);
    expect((await speech({ 'xi-api-key': `${SECRETS.SPEECH_API_KEY}-wrong` })).status).toBe(401);

    const bearer = { authorization: `Bearer ${SECRETS.CONTROL_TOKEN}` };
    expect((await fetch(`${app.url}/calls`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${app.url}/metrics`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${app.url}/discord/guilds`, { headers: bearer })).status).toBe(200);
    expect((await fetch(`${app.url}/calls`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(
      401,
    );

    // Gateways carrying the media token in the query and in the path; then a call that speaks.
    const ws = app.url.replace('http:', 'ws:');
    for (const url of [
      `${ws}/media/twilio?token=${SECRETS.MEDIA_STREAM_TOKEN}`,
      `${ws}/media/twilio/${SECRETS.MEDIA_STREAM_TOKEN}`,
    ]) {
      const g = new FakeTwilio(url);
      await g.start();
      await g.until(() => app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
      const said = await fetch(`${app.url}/calls/${g.callSid}/say`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'Hello.' }),
      });
      expect(said.status).toBe(200);
      await g.close();
    }
    const refused = new FakeTwilio(`${ws}/media/twilio?token=wrong-${SECRETS.MEDIA_STREAM_TOKEN}`);
    await expect(refused.start()).rejects.toThrow();

    // The remote app: a call that speaks through the first app, once well and once with a voice the
    // service does not know (its error is logged).
    const remoteCall = new FakeTwilio(
      `${remote.url.replace('http:', 'ws:')}/media/twilio?token=${SECRETS.MEDIA_STREAM_TOKEN}`,
    );
    await remoteCall.start();
    await remoteCall.until(
      () => remote.calls.get(remoteCall.callSid)?.state.status === 'active',
      5000,
      'the remote call',
    );
    for (const [body, status] of [
      [{ text: 'Spoken far away.' }, 'played'],
      [{ text: 'Nobody has this voice.', voice_id: 'no-such-voice' }, 'failed'],
    ] as const) {
      const said = await fetch(`${remote.url}/calls/${remoteCall.callSid}/say`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(said.status).toBe(200);
      expect(((await said.json()) as { status: string }).status).toBe(status);
    }
    await remoteCall.close();

    await new Promise((r) => setTimeout(r, 200));
    // Trace level really logged: one line per call event, with the call's id.
    const lines = log
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['msg'] === 'call.started' && typeof l['callId'] === 'string')).toHaveLength(
      3,
    );
    expect(
      lines.filter(
        (l) => l['msg'] === 'utterance.finished' && (l['result'] as { status?: string }).status === 'played',
      ),
    ).toHaveLength(3);
    // The remote app's ready line names its service, without the credentials.
    expect(lines.map((l) => l['speechBaseUrl'])).toContain(app.url.replace('://', '://[redacted]@'));
    expect(lines.some((l) => l['msg'] === 'media stream refused')).toBe(true);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(log.includes(value), `${name} in the log`).toBe(false);
    }
    // Not even a recognisable part of the Discord token (its last segment is the secret one).
    expect(log.includes(SECRETS.DISCORD_TOKEN.split('.')[2]!)).toBe(false);
    // Neither the base URL's password nor the Basic credentials made of it.
    expect(log.includes(BASE_URL_PASSWORD), 'the SPEECH_BASE_URL password in the log').toBe(false);
    expect(log.includes(Buffer.from(`bob:${BASE_URL_PASSWORD}`).toString('base64'))).toBe(false);
  });
});
