/**
 * Call control, measured against a fake of Twilio's Calls REST API on loopback (testkit), through the
 * real app:
 *
 * - `POST /calls` → the gateway's REST request received (the create, whole), and → the app's 201.
 *   One call at a time; each is cancelled after (its REST hang-up), so none rings on.
 * - `POST /calls/{id}/transfer` while the bot talks (a long reply playing to a Twilio-protocol caller)
 *   → the gateway receiving the transfer (the call's update, whole), → the last of the bot's audio
 *   arriving at the caller (nothing of it after), and → the app's 200.
 *
 * The REST API answers at once: what is measured is voxbridge's own path, not a vendor's latency.
 */
import { startBenchApp } from './app.js';
import { Caller, until } from './barge-in.js';
import { fmt, median, percentile, printTable } from './stats.js';
import { FakeTwilioRest } from '../testkit/fake-gateway-rest/index.js';
import { freePort } from '../testkit/ports.js';

const ACCOUNT_SID = 'AC' + '7'.repeat(32);
const AUTH_TOKEN = 'bench-twilio-auth-token';
const MEDIA_TOKEN = 'bench-media-stream-token';
const REPLY = 'This is a long answer that keeps going while the caller waits to be put through. '.repeat(8);

export async function benchCallControl(placements = 40, transfers = 20): Promise<void> {
  const fake = await FakeTwilioRest.start({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
  const port = await freePort();
  const bench = await startBenchApp(
    'call-control',
    {
      calls: {
        defaultFlow: null,
        bargeIn: { enabled: false },
        control: { twilio: { apiBaseUrl: fake.url }, maxPlacing: 10 },
      },
    },
    {
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      MEDIA_STREAM_TOKEN: MEDIA_TOKEN,
    },
  );
  const base = bench.app.url;
  const json = { 'content-type': 'application/json' };
  try {
    // POST /calls → the create reaching the gateway.
    const toRest: number[] = [];
    const toAnswer: number[] = [];
    for (let i = 0; i < placements + 3; i++) {
      const created = fake.server.nextRequest((r) => r.path.endsWith('/Calls.json'));
      const sent = performance.now();
      const res = await fetch(`${base}/calls`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ gateway: 'twilio', to: '+15551234567', from: '+15550001111' }),
      });
      const answered = performance.now();
      const { id } = (await res.json()) as { id: string };
      if (res.status !== 201) throw new Error(`POST /calls answered ${res.status}`);
      const request = await created;
      // The first three warm the paths (connections, JIT) and are not counted.
      if (i >= 3) {
        toRest.push(request.receivedAt - sent);
        toAnswer.push(answered - sent);
      }
      await until(() => bench.app.calls.outbound?.get(id)?.state.status === 'ringing', 5000);
      const cancelled = fake.server.nextRequest((r) => r.form?.['Status']?.[0] === 'completed');
      await fetch(`${base}/calls/${id}`, { method: 'DELETE' });
      await cancelled;
    }

    // POST /calls/{id}/transfer while the bot talks → the gateway's update, and the bot's last audio.
    const transferRest: number[] = [];
    const transferSilent: number[] = [];
    const transferAnswer: number[] = [];
    /** The bot's media messages that arrived after the gateway had the transfer, over every transfer. */
    let lateMessages = 0;
    for (let i = 0; i < transfers + 2; i++) {
      const rest = fake.addCall(ACCOUNT_SID);
      const caller = new Caller(`ws://127.0.0.1:${port}/media/twilio/${MEDIA_TOKEN}`, 9000 + i, {
        callSid: rest.sid,
        accountSid: ACCOUNT_SID,
      });
      await caller.start();
      try {
        if (!(await until(() => bench.app.calls.get(rest.sid)?.state.status === 'active', 5000)))
          throw new Error('the call did not start');
        await fetch(`${base}/calls/${rest.sid}/say`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ text: REPLY, wait: false }),
        });
        // A second of the reply heard first: the transfer cuts a bot in full flow.
        if (!(await until(() => caller.receivedMs > 1000, 15_000))) throw new Error('the bot did not talk');
        const updated = fake.server.nextRequest((r) => r.path.endsWith(`/Calls/${rest.sid}.json`));
        const sent = performance.now();
        const res = await fetch(`${base}/calls/${rest.sid}/transfer`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ to: '+15557654321' }),
        });
        const answered = performance.now();
        if (res.status !== 200) throw new Error(`transfer answered ${res.status}`);
        const request = await updated;
        await until(() => bench.app.calls.get(rest.sid) === undefined, 5000);
        // Anything still on its way has arrived by now (loopback).
        await new Promise((r) => setTimeout(r, 100));
        const lastAudio = caller.mediaAt.at(-1) ?? sent;
        if (i >= 2) {
          lateMessages += caller.mediaAt.filter((at) => at > request.receivedAt).length;
          transferRest.push(request.receivedAt - sent);
          transferSilent.push(lastAudio - sent);
          transferAnswer.push(answered - sent);
        }
      } finally {
        caller.close();
      }
    }
    const row = (name: string, v: number[]): string[] => [
      name,
      String(v.length),
      fmt(median(v), 1),
      fmt(percentile(v, 95), 1),
      fmt(Math.max(...v), 1),
    ];
    printTable(
      'Call control through the app, against a fake Twilio REST API answering at once (ms)',
      ['path', 'n', 'p50', 'p95', 'max'],
      [
        row('POST /calls → the create received by the gateway', toRest),
        row('POST /calls → 201 at the client', toAnswer),
        row('POST /calls/{id}/transfer → the update received by the gateway', transferRest),
        row("POST /calls/{id}/transfer → the bot's last audio at the caller", transferSilent),
        row('POST /calls/{id}/transfer → 200 at the client', transferAnswer),
      ],
    );
    console.log(
      `the bot's media messages arriving after the gateway had the transfer: ${lateMessages} in ${transferRest.length} transfers ` +
        '(the bot sends one every 40 ms: its audio stops within the REST round trip)',
    );
  } finally {
    await bench.close();
    await fake.close();
  }
}
