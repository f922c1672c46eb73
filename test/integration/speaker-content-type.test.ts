/**
 * Issue 14, finding 7: a "speech service" answering 200 text/html (a proxy's login page, a wrong base
 * URL) had its HTML played to the caller as PCM noise. Through the whole speaker, on a real loopback
 * server: the utterance fails with a coded error and not one frame reaches the sink.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/speaker/clock.js';
import { Speaker } from '../../src/speaker/speaker.js';
import { SpeechClient } from '../../src/speech/client.js';
import { SpeechServiceError } from '../../src/speech/errors.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const MULAW_8K = { encoding: 'mulaw', sampleRate: 8000, channels: 1 } as const;
/** Long enough to be most of a second of noise when read as 24 kHz PCM. */
const HTML = `<!doctype html><html><body>${'<p>Please sign in to continue.</p>'.repeat(1000)}</body></html>\n`;

let server: Server;
let baseUrl: string;
let requests = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    requests++;
    req.resume();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(HTML);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('a speech service answering 200 text/html', () => {
  it('fails the utterance with unexpected_content_type and plays nothing', async () => {
    const client = new SpeechClient({ baseUrl, apiKey: 'k-0123456789' });
    const sink = new RecordingSink(MULAW_8K, systemClock, 0, true);
    sink.instant = true;
    const speaker = new Speaker({ source: client, sink, voiceId: 'v' });
    try {
      const result = await speaker.say('Hello, is anyone there?').result;
      expect(result.status).toBe('failed');
      expect(result.error).toBeInstanceOf(SpeechServiceError);
      expect(result.error).toMatchObject({ code: 'unexpected_content_type', status: 200, retryable: false });
      expect(result.playedMs).toBe(0);
      expect(sink.frames).toHaveLength(0);
      // Not retried, although the client would retry a 5xx twice.
      expect(requests).toBe(1);
    } finally {
      await speaker.close();
      await client.close();
    }
  });
});
