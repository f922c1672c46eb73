/**
 * Spoken answers to a flow's menu, end to end: the real app (local speech service, Silero barge-in, the
 * offline recogniser) and a fake Twilio caller who talks at real time through μ-law with line noise at
 * 20 dB SNR. The caller says a choice after the prompt, barges in over the prompt and then says it, or
 * presses a key while talking (the key wins); each answer is checked by the branch the flow took and
 * by the `gather.result` event on the event stream and on the flow's webhook.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMulaw } from '../../src/audio/g711.js';
import { SseReader } from '../../testkit/sse.js';
import { noisyUtterance, VOICES } from '../../testkit/vad-audio.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

/** The menu's prompt; the barge-in test's flow has a longer one, to talk over. */
const PROMPT = 'Say billing, support or sales.';
const LONG_PROMPT =
  'Thank you for calling the shop. To hear about your bill, say billing. For help with an order, ' +
  'say support. To buy something, say sales. Or press one, two or three.';

const shopFlow = (prompt: string, webhook: string) => ({
  webhook,
  start: 'menu',
  nodes: {
    menu: {
      type: 'gather',
      prompt,
      input: ['dtmf', 'speech'],
      timeoutMs: 5000,
      retries: 1,
      branches: { '1': 'billing', '2': 'support', '3': 'sales' },
      speech: { '1': ['billing', 'my bill'], '2': ['support', 'help'], '3': ['sales'] },
      onFail: 'bye',
    },
    billing: { type: 'hangup', text: 'Billing, one moment.' },
    support: { type: 'hangup', text: 'Support, one moment.' },
    sales: { type: 'hangup', text: 'Sales, one moment.' },
    bye: { type: 'hangup', text: 'Goodbye.' },
  },
});

type Data = Record<string, unknown>;

let t: TestApp;
let hooks: Server;
const posted: Data[] = [];
/** What the caller says, as μ-law at 8 kHz: 300 ms of line noise, the words, 1 s of line noise. */
let support: Uint8Array;
let myBill: Uint8Array;
let sales: Uint8Array;

/** The utterance from 300 ms before its speech, through μ-law, at 20 dB SNR. */
async function spoken(text: string, voice: number, seed: number): Promise<Uint8Array> {
  const u = await noisyUtterance(text, VOICES[voice]!, 8000, 20, seed);
  return encodeMulaw(u.samples.subarray(Math.max(0, Math.round(((u.onsetMs - 300) * 8000) / 1000))));
}

beforeAll(async () => {
  hooks = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      posted.push(JSON.parse(body) as Data);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
  const webhook = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
  [t, support, myBill, sales] = await Promise.all([
    startTestApp({
      // One VAD thread and one speech engine thread: three calls need no more, and the app starts sooner.
      calls: { defaultFlow: 'shop', bargeIn: { workers: 1 } },
      service: { workers: 1 },
      flows: { shop: shopFlow(PROMPT, webhook), long: shopFlow(LONG_PROMPT, webhook) },
    }),
    spoken('Support, please.', 0, 1),
    spoken('My bill, please.', 2, 2),
    spoken('I would like sales, please.', 0, 3),
  ]);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await new Promise((resolve) => hooks?.close(resolve));
});

async function connect(flow = 'shop'): Promise<{ g: FakeTwilio; sse: SseReader }> {
  const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`, { customParameters: { flow } });
  await g.start();
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
  g.startCallerAudio();
  return { g, sse: new SseReader(`${t.url}/calls/${g.callSid}/events?after=0`) };
}

/** The caller says `audio` at real time, with silence before and after (a live line). */
async function say(g: FakeTwilio, audio: Uint8Array): Promise<void> {
  g.stopCallerAudio();
  await g.sendLive(audio);
  g.startCallerAudio();
}

const started = (sse: SseReader): string[] =>
  sse.of('utterance.started').map((u) => String((u as Data)['text']));

async function gatherResult(sse: SseReader): Promise<Data> {
  await sse.until((e) => e.some((x) => x.event === 'gather.result'), 15_000);
  return sse.of('gather.result')[0] as Data;
}

// Three calls at once, each on its own: the app serves them as it serves any calls.
describe.concurrent('a menu that hears speech (Twilio, μ-law, 20 dB SNR)', () => {
  it('takes the branch the caller names after the prompt, and reports it', async () => {
    const { g, sse } = await connect();
    await sse.until((e) => e.some((x) => x.event === 'utterance.finished'), 20_000);
    expect(sse.of('utterance.finished')[0]).toMatchObject({ result: { status: 'played' } });
    await say(g, support);
    const result = await gatherResult(sse);
    expect(result).toMatchObject({
      call_id: g.callSid,
      flow: 'shop',
      node: 'menu',
      input: 'speech',
      digits: '2',
      next: 'support',
    });
    expect(String(result['text'])).toMatch(/\bsupport\b/);
    expect(result['confidence']).toEqual(expect.any(Number));
    expect(result['latency_ms']).toEqual(expect.any(Number));
    expect(result['latency_ms'] as number).toBeLessThan(1000);
    const words = result['words'] as Array<{ word: string; start_ms: number; end_ms: number }>;
    expect(words.map((w) => w.word)).toContain('support');
    for (const w of words) expect(w.end_ms).toBeGreaterThanOrEqual(w.start_ms);
    await sse.until(() => started(sse).includes('Support, one moment.'), 10_000);
    // The flow's webhook got the same event.
    await g.until(
      () => posted.some((p) => p['type'] === 'gather.result' && p['call_id'] === g.callSid),
      5000,
      'the webhook',
    );
    expect(posted.find((p) => p['type'] === 'gather.result' && p['call_id'] === g.callSid)).toEqual(result);
    sse.close();
    await g.close();
  }, 30_000);

  it('hears a caller who barges in over the prompt and says their choice; the prompt is not resumed', async () => {
    const { g, sse } = await connect('long');
    await g.until(() => g.playout.playedMs > 1500, 10_000, 'the prompt to be heard');
    await say(g, myBill);
    const result = await gatherResult(sse);
    expect(result).toMatchObject({ input: 'speech', digits: '1', next: 'billing' });
    expect(sse.of('barge-in')).toHaveLength(1);
    expect(sse.of('utterance.finished')[0]).toMatchObject({ result: { status: 'interrupted' } });
    await sse.until(() => started(sse).includes('Billing, one moment.'), 10_000);
    // A short turn over a listening menu is its answer, never a false barge-in to take back.
    expect(sse.of('barge-in.resumed')).toEqual([]);
    expect(started(sse)).toEqual([LONG_PROMPT, 'Billing, one moment.']);
    sse.close();
    await g.close();
  }, 30_000);

  it('a key pressed while the caller talks wins over what they say', async () => {
    const { g, sse } = await connect();
    // The caller talks over the prompt (which cuts it), and presses a key in the middle of their words.
    await g.until(() => g.playout.playedMs > 300, 10_000, 'the prompt to be heard');
    g.stopCallerAudio();
    const talking = g.sendLive(sales);
    await new Promise((r) => setTimeout(r, 900)); // into "I would like…"
    g.dtmf('2');
    await talking;
    g.startCallerAudio();
    const result = await gatherResult(sse);
    expect(result).toMatchObject({ input: 'dtmf', digits: '2', next: 'support', text: null });
    await sse.until(() => started(sse).includes('Support, one moment.'), 10_000);
    // The turn, ended after the key (its audio sent whole, 1 s of line noise after the words), is
    // nobody's answer: still one result, and the branch the key chose.
    await new Promise((r) => setTimeout(r, 300));
    expect(sse.of('gather.result')).toHaveLength(1);
    expect(started(sse)).toEqual([PROMPT, 'Support, one moment.']);
    sse.close();
    await g.close();
  }, 30_000);
});
