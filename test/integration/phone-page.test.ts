/**
 * The browser phone's server side, without a browser: the page and its whole module graph are served
 * (and nothing else is), `/phone/config` says what the page must ask for, `/phone/voices` and
 * `/phone/flows` sit behind CONTROL_TOKEN, and a call's event stream replays what a late subscriber
 * missed (`?after=`, `Last-Event-ID`), which is how the page sees its call's greeting.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtInVoices } from '../../src/service/voices/builtin.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';
import { SseReader } from '../../testkit/sse.js';

let open: TestApp;
let guarded: TestApp;
beforeAll(async () => {
  [open, guarded] = await Promise.all([
    startTestApp(),
    startTestApp({}, undefined, {
      CONTROL_TOKEN: 'test-control-token-1',
      MEDIA_STREAM_TOKEN: 'test-media-token-1',
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([open.close(), guarded.close()]);
});

/** A GET with the path exactly as written (fetch would resolve `..` before sending). */
async function rawGet(base: string, path: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    request({ hostname, port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

describe('the browser phone page', () => {
  it('serves the page and every module it imports, as JavaScript', async () => {
    const res = await fetch(`${open.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    const entry = /<script type="module" src="([^"]+)"/.exec(html)?.[1];
    expect(entry).toBe('/phone/js/web/phone/main.js');
    const css = /<link rel="stylesheet" href="([^"]+)"/.exec(html)?.[1];
    const style = await fetch(`${open.url}${css!}`);
    expect(style.status).toBe(200);
    expect(style.headers.get('content-type')).toMatch(/^text\/css/);

    // Follow the static imports from the entry, and the worklet the page loads by URL.
    const pending = [entry!, '/phone/js/web/phone/worklet.js'];
    const seen = new Set<string>();
    while (pending.length > 0) {
      const path = pending.pop()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const module = await fetch(`${open.url}${path}`);
      expect(module.status, path).toBe(200);
      expect(module.headers.get('content-type'), path).toMatch(/^text\/javascript/);
      const source = await module.text();
      for (const m of source.matchAll(/\bfrom\s+'([^']+)'/g))
        pending.push(new URL(m[1]!, `http://x${path}`).pathname);
    }
    // The page, its call, control client, picture, worklet; G.711 and the Twilio messages it shares.
    expect([...seen]).toEqual(
      expect.arrayContaining([
        '/phone/js/src/audio/g711.js',
        '/phone/js/src/protocols/twilio-caller.js',
        '/phone/js/web/phone/worklet-messages.js',
      ]),
    );
  });

  it('serves nothing outside the page: no traversal, no other files, no writes', async () => {
    for (const path of [
      '/phone/js/../../package.json',
      '/phone/js/%2e%2e/%2e%2e/package.json',
      '/phone/js/web/phone/main.ts',
      '/phone/index.html/../../package.json',
      '/phone/js/src/app/config.js',
      '/phone/.env',
    ])
      expect([404], path).toContain(await rawGet(open.url, path));
    const post = await fetch(`${open.url}/`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(405);
  });

  it('says what the page must ask for, and when it cannot call at all', async () => {
    const config = async (t: TestApp): Promise<unknown> => (await fetch(`${t.url}/phone/config`)).json();
    expect(await config(open)).toEqual({
      media: { path: '/media/twilio', available: true, token_required: false },
      control: { token_required: false },
    });
    // Public even when the control API is guarded: it gives nothing away but what to ask for.
    expect(await config(guarded)).toEqual({
      media: { path: '/media/twilio', available: true, token_required: true },
      control: { token_required: true },
    });
    const signed = await startTestApp({}, undefined, { TWILIO_AUTH_TOKEN: 'test-twilio-auth-token' });
    const noTwilio = await startTestApp({ calls: { gateways: ['telnyx'] } });
    try {
      expect(await config(signed)).toMatchObject({
        media: { available: false, reason: expect.stringContaining('MEDIA_STREAM_TOKEN') as string },
      });
      expect(await config(noTwilio)).toMatchObject({
        media: { available: false, reason: expect.stringContaining('calls.gateways') as string },
      });
    } finally {
      await Promise.all([signed.close(), noTwilio.close()]);
    }
  });

  it('lists voices and flows through the server, behind CONTROL_TOKEN', async () => {
    for (const path of ['/phone/voices', '/phone/flows']) {
      expect((await fetch(`${guarded.url}${path}`)).status).toBe(401);
      const wrong = await fetch(`${guarded.url}${path}`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(401);
    }
    const auth = { authorization: 'Bearer test-control-token-1' };
    const voices = (await (await fetch(`${guarded.url}/phone/voices`, { headers: auth })).json()) as {
      voices: Array<Record<string, string>>;
    };
    // Everything the speech service lists, the built-in cast included: the page's voice picker.
    for (const v of builtInVoices())
      expect(voices.voices).toContainEqual({ voice_id: v.voice_id, name: v.name, category: 'premade' });
    const flows = (await (await fetch(`${guarded.url}/phone/flows`, { headers: auth })).json()) as {
      default_flow: string;
      flows: Record<string, { start: string; nodes: Array<{ name: string; type: string; next: string[] }> }>;
    };
    expect(flows.default_flow).toBe('default');
    const flow = flows.flows['default']!;
    expect(flow.start).toBe('greeting');
    expect(flow.nodes[0]).toEqual({ name: 'greeting', type: 'say', next: ['menu'] });
    const menu = flow.nodes.find((n) => n.name === 'menu')!;
    expect(menu.type).toBe('gather');
    expect(menu.next).toEqual(expect.arrayContaining(['key-1', 'key-0', 'goodbye']));
  });
});

describe("a call's event stream", () => {
  it('replays what a late subscriber missed: ?after=0 from the start, Last-Event-ID after an id', async () => {
    const g = new FakeTwilio(`${open.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => open.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call to start');
    // The default flow's greeting has started before anyone subscribed.
    const live = new SseReader(`${open.url}/calls/${g.callSid}/events`);
    const all = new SseReader(`${open.url}/calls/${g.callSid}/events?after=0`);
    try {
      await all.until((e) => e.some((x) => x.event === 'utterance.started'));
      const replayed = all.events
        .filter((e) => e.event !== 'call.state')
        .map((e) => e.data as { seq: number; type: string });
      expect(replayed[0]).toMatchObject({ seq: 1, type: 'call.started' });
      expect(replayed.map((e) => e.seq)).toEqual(replayed.map((_, i) => i + 1));
      const startedSeq = replayed.find((e) => e.type === 'utterance.started')!.seq;

      const resumed = new SseReader(`${open.url}/calls/${g.callSid}/events`, {
        'last-event-id': String(startedSeq),
      });
      g.dtmf('5');
      await resumed.until((e) => e.some((x) => x.event === 'dtmf'));
      const seqs = resumed.events
        .filter((e) => e.event !== 'call.state')
        .map((e) => (e.data as { seq: number }).seq);
      expect(seqs[0]).toBe(startedSeq + 1);
      resumed.close();

      // Without either, only what happens from now on (and the snapshot).
      await live.until((e) => e.some((x) => x.event === 'dtmf'));
      expect(live.of('call.started')).toHaveLength(0);
      expect(live.events[0]!.event).toBe('call.state');
      // A malformed id is no resume point: the same as none.
      const odd = new SseReader(`${open.url}/calls/${g.callSid}/events?after=-1`);
      await odd.until((e) => e.length > 0);
      await new Promise((r) => setTimeout(r, 100));
      expect(odd.of('call.started')).toHaveLength(0);
      odd.close();
    } finally {
      live.close();
      all.close();
      g.stop();
      g.playout.stop();
    }
  });
});
