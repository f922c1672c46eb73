/**
 * Graceful shutdown: new connections are refused at once, speech under way finishes within the grace
 * period (and is cut when it would take longer), then calls are hung up with a normal close.
 */
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

async function callSaying(url: string, text: string): Promise<{ g: FakeTwilio; result: Promise<Response> }> {
  const g = new FakeTwilio(`${url.replace('http:', 'ws:')}/media/twilio`);
  await g.start();
  const result = fetch(`${url}/calls/${g.callSid}/say`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  return { g, result };
}

function closeCode(g: FakeTwilio): Promise<number> {
  return new Promise((resolve) => {
    if (g.ws.readyState === g.ws.CLOSED) resolve(-1);
    else g.ws.once('close', (code: number) => resolve(code));
  });
}

describe('shutdown', () => {
  it('lets an utterance under way finish within the grace period, refuses new calls, then hangs up', async () => {
    const t = await startTestApp({ calls: { defaultFlow: null } });
    const { g, result } = await callSaying(t.url, 'One last thing before we close.');
    await g.until(() => g.playout.playedMs > 200, 5000, 'speech');
    const closed = closeCode(g);
    const started = performance.now();
    const closing = t.app.close({ graceMs: 8000 });
    // New connections are refused while the old call finishes.
    const late = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
    await expect(late.start()).rejects.toThrow();
    const body = (await (await result).json()) as { status: string };
    expect(body.status).toBe('played');
    await closing;
    expect(await closed).toBe(1000);
    expect(performance.now() - started).toBeLessThan(8000);
    await t.close();
  });

  it('cuts speech that would outlast the grace period', async () => {
    const t = await startTestApp({ calls: { defaultFlow: null } });
    const { g, result } = await callSaying(t.url, `${'This goes on and on, '.repeat(40)}the end.`);
    await g.until(() => g.playout.playedMs > 200, 5000, 'speech');
    const started = performance.now();
    await t.app.close({ graceMs: 300 });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    // Far less than the 40 s the speech would take: cut. (Closing the calls' workers took 3.75 s once
    // with two other test files running on two cores; 550 ms alone.)
    expect(elapsed).toBeLessThan(8000);
    const body = (await (await result).json()) as { status: string };
    expect(body.status).toBe('interrupted');
    await t.close();
  });
});
