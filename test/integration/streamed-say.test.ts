/**
 * `POST|PUT /calls/{id}/say` with a `text/plain` body spoken while it arrives (an LLM's output piped
 * through `curl -T -`): the first clause is heard before the body ends, the whole text is heard in
 * order, and the content types and options a streamed say takes are checked like a JSON one's.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FakeTwilio } from '../helpers/gateways/twilio.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ calls: { defaultFlow: null, maxCalls: 4 } });
});
afterAll(async () => {
  await t.close();
});

async function connect(): Promise<FakeTwilio> {
  const g = new FakeTwilio(`${t.url.replace('http:', 'ws:')}/media/twilio`);
  await g.start();
  await g.until(() => t.app.calls.get(g.callSid)?.state.status === 'active', 5000, 'the call to start');
  return g;
}

/**
 * Sends `pieces` as one chunked body, `gapMs` apart (as an LLM writes), and resolves with the answer.
 * `onPiece(i)` runs after piece i was written.
 */
function streamSay(
  path: string,
  pieces: string[],
  options: {
    method?: string;
    contentType?: string | null;
    gapMs?: number;
    onPiece?: (i: number) => void;
  } = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, t.url);
    const headers: Record<string, string> = { 'transfer-encoding': 'chunked' };
    if (options.contentType !== null)
      headers['content-type'] = options.contentType ?? 'text/plain; charset=utf-8';
    const req = request(url, { method: options.method ?? 'POST', headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          json: JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown>,
        }),
      );
    });
    req.on('error', reject);
    void (async () => {
      for (const [i, piece] of pieces.entries()) {
        req.write(piece);
        options.onPiece?.(i);
        await new Promise((r) => setTimeout(r, options.gapMs ?? 50));
      }
      req.end();
    })();
  });
}

describe('a say streamed as text/plain', () => {
  it('is heard while the text still arrives, then whole', async () => {
    const g = await connect();
    // Tokens at about 20 per second; the first clause is complete at the third piece.
    const pieces = [
      'Of course',
      ', I can',
      ' help you',
      ' with',
      ' that',
      ' booking',
      ' right',
      ' away.',
      ' Anything',
      ' else?',
    ];
    let mediaWhenLastPieceSent = -1;
    const said = await streamSay(`/calls/${g.callSid}/say`, pieces, {
      method: 'PUT',
      onPiece: (i) => {
        if (i === pieces.length - 1) mediaWhenLastPieceSent = g.media().length;
      },
    });
    expect(said.status).toBe(200);
    expect(said.json).toMatchObject({ status: 'played', heard_text: pieces.join('') });
    // Audio was flowing to the caller before the body was finished.
    expect(mediaWhenLastPieceSent).toBeGreaterThan(0);
    expect(g.violations).toEqual([]);
    await g.close();
  });

  it('keeps talking while a long sentence streams in at 12 words a second: no silence in the middle', async () => {
    const g = await connect();
    const sentence =
      'Your order left our warehouse in Columbus this morning and the carrier expects to deliver it to your front door by Thursday afternoon at the latest.';
    const pieces = ['Sure thing, ', ...sentence.split(/(?<= )/)];
    const said = await streamSay(`/calls/${g.callSid}/say`, pieces, { method: 'PUT', gapMs: 1000 / 12 });
    expect(said.status).toBe(200);
    expect(said.json).toMatchObject({ status: 'played', heard_text: pieces.join('') });
    // The caller's line, from the first audio on: whole sentences left ~2 s of silence after the first
    // clause here (the 24 words arrive in 2 s); cut to keep talking, there is none to speak of
    // (`npm run bench -- answers`). A generous bound: the media's arrivals are on this machine's clock.
    const at = g.received.filter((r) => r.event === 'media').map((r) => r.at);
    let longest = 0;
    for (let i = 1; i < at.length; i++) longest = Math.max(longest, at[i]! - at[i - 1]!);
    expect(longest).toBeLessThan(800);
    expect(g.violations).toEqual([]);
    await g.close();
  });

  it('takes PUT with no Content-Type (curl -T -), and its options from the query', async () => {
    const g = await connect();
    const said = await streamSay(
      `/calls/${g.callSid}/say?wait=false&interruptible=false`,
      ['Hold on. ', 'One moment.'],
      {
        method: 'PUT',
        contentType: null,
        gapMs: 10,
      },
    );
    expect(said.status).toBe(202);
    expect(said.json['id']).toEqual(expect.any(String));
    await g.until(() => g.media().length > 10, 10_000, 'speech');
    // interruptible=false held: a control-API interrupt does not cut it.
    const cut = await fetch(`${t.url}/calls/${g.callSid}/interrupt`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(((await cut.json()) as { interrupted: boolean }).interrupted).toBe(false);
    await g.close();
  });

  it('works with curl -T - fed by a program that writes slowly, as an LLM does', async () => {
    const g = await connect();
    const curl = spawn('curl', ['-sS', '-T', '-', `${t.url}/calls/${g.callSid}/say`], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let answer = '';
    curl.stdout.on('data', (c: Buffer) => (answer += c.toString()));
    const pieces = ['Your order ', 'has shipped', ', and it ', 'will arrive ', 'on Friday.'];
    for (const piece of pieces) {
      curl.stdin.write(piece);
      await new Promise((r) => setTimeout(r, 150));
    }
    const mediaBeforeEnd = g.media().length;
    curl.stdin.end();
    await once(curl, 'exit');
    expect(JSON.parse(answer)).toMatchObject({ status: 'played', heard_text: pieces.join('') });
    expect(mediaBeforeEnd).toBeGreaterThan(0);
    await g.close();
  });

  it('refuses other content types, bad options, and a PUT of JSON with no say in it', async () => {
    const g = await connect();
    const xml = await streamSay(`/calls/${g.callSid}/say`, ['<speak/>'], { contentType: 'application/xml' });
    expect(xml.status).toBe(415);
    expect(String(xml.json['error'])).toMatch(/text\/plain/);
    const latin = await streamSay(`/calls/${g.callSid}/say`, ['hi'], {
      contentType: 'text/plain; charset=latin1',
    });
    expect(latin.status).toBe(415);
    const bad = await streamSay(`/calls/${g.callSid}/say?wait=maybe`, ['hi'], { method: 'PUT' });
    expect(bad).toMatchObject({ status: 400, json: { param: 'wait' } });
    const unknown = await streamSay(`/calls/${g.callSid}/say?colour=red`, ['hi'], { method: 'PUT' });
    expect(unknown.status).toBe(400);
    // POST text/plain is what any web page may send without a preflight: refused without the token.
    const simple = await streamSay(`/calls/${g.callSid}/say`, ['Transfer the money.']);
    expect(simple.status).toBe(415);
    const get = await fetch(`${t.url}/calls/${g.callSid}/say`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, PUT');
    await g.close();
  });
});
