/**
 * `GET /metrics`: Prometheus text that follows what really happened — a phone call's utterance (fake
 * Twilio), a Discord guild's utterance and a member barging in (fake voice server) — and that wants
 * CONTROL_TOKEN when one is set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeMainGateway, FakeVoiceServer, testTls } from '../../testkit/discord/voice-server.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ calls: { defaultFlow: null } });
});
afterAll(async () => {
  await t.close();
});

async function scrape(url = t.url, headers: Record<string, string> = {}): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

describe('GET /metrics', () => {
  it('counts live calls and guilds, utterances by outcome, latencies, and barge-ins', async () => {
    const before = await scrape();
    expect(before.get('voxbridge_calls_active')).toBe(0);
    expect(before.get('voxbridge_discord_guilds_active')).toBe(0);
    expect(before.get('voxbridge_engine_queue_depth')).toBe(0);
    expect(before.get('voxbridge_utterances_total{adapter="phone",outcome="played"}')).toBe(0);
    expect(before.has('voxbridge_process_cpu_seconds_total')).toBe(true);
    // The VAD workers' counters (vad-workers.test.ts makes them count): none skipped on an idle machine.
    expect(before.get('voxbridge_vad_windows_skipped_total')).toBe(0);
    expect(before.get('voxbridge_vad_inferences_total')).toBe(0);

    // A phone call says one thing.
    const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
    await g.start();
    await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call');
    const said = await fetch(`${t.url}/calls/${g.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Your table is booked.' }),
    });
    expect(((await said.json()) as { status: string }).status).toBe('played');
    const during = await scrape();
    expect(during.get('voxbridge_calls_active')).toBe(1);
    expect(during.get('voxbridge_utterances_total{adapter="phone",outcome="played"}')).toBe(1);
    expect(during.get('voxbridge_first_byte_seconds_count{adapter="phone"}')).toBe(1);
    expect(during.get('voxbridge_first_frame_seconds_count{adapter="phone"}')).toBe(1);
    expect(during.get('voxbridge_first_frame_seconds_sum{adapter="phone"}')).toBeGreaterThan(0);
    await g.close();

    // A Discord guild speaks, and a member talks over it.
    const server = await FakeVoiceServer.start(testTls());
    try {
      const guild = '100000000000000009';
      const gateway = new FakeMainGateway(server, { guildId: guild, userId: '500000000000000001' });
      const voice = await t.app.discord.join(guild, '200000000000000001', gateway.adapterCreator);
      expect((await voice.say('Roll for initiative.').result).status).toBe('played');
      const handle = voice.say(`${'The goblin speaks on, and on, '.repeat(20)}until dawn.`);
      await server.waitFor(() => voice.speaker.audible, 5000, 'speech');
      await new Promise((r) => setTimeout(r, 300));
      const pcm = new Int16Array(48_000 * 2 * 0.6);
      for (let i = 0; i < pcm.length / 2; i++)
        pcm[2 * i] = pcm[2 * i + 1] = Math.round(8000 * Math.sin((2 * Math.PI * 200 * i) / 48_000));
      await server.injectSpeech(guild, '400000000000000001', pcm);
      expect((await handle.result).status).toBe('interrupted');
      const after = await scrape();
      expect(after.get('voxbridge_discord_guilds_active')).toBe(1);
      expect(after.get('voxbridge_utterances_total{adapter="discord",outcome="played"}')).toBe(1);
      expect(after.get('voxbridge_utterances_total{adapter="discord",outcome="interrupted"}')).toBe(1);
      expect(after.get('voxbridge_barge_ins_total{adapter="discord"}')).toBe(1);
      // The member talked ≥ 200 ms before the bot stopped: that lands in the 0.25 s bucket or above.
      expect(after.get('voxbridge_barge_in_stop_seconds_bucket{le="0.15",adapter="discord"}')).toBe(0);
      expect(after.get('voxbridge_barge_in_stop_seconds_count{adapter="discord"}')).toBe(1);
      expect(after.get('voxbridge_calls_active')).toBe(0);
    } finally {
      await t.app.discord.close();
      await server.close();
    }
  });

  it('wants the bearer token when CONTROL_TOKEN is set', async () => {
    const secured = await startTestApp({}, undefined, { CONTROL_TOKEN: 'control-token-0123456789' });
    try {
      expect((await fetch(`${secured.url}/metrics`)).status).toBe(401);
      const samples = await scrape(secured.url, { authorization: 'Bearer control-token-0123456789' });
      expect(samples.get('voxbridge_calls_active')).toBe(0);
    } finally {
      await secured.close();
    }
  });
});
