/**
 * The innocent bystander of a hardening test: while an attacker works on the app, a Twilio call that
 * has nothing to do with it is speaking a long answer, `/healthz` is asked every 100 ms, and the
 * process's RSS is sampled. Our rule is that a bad input costs one connection, never the process and
 * never another call: the report says what the bystander saw.
 */
import { FakeTwilio } from './gateways/twilio.js';

/** What the bystander saw while it watched. */
export interface BystanderReport {
  /** The slowest `/healthz` answer (ms). */
  healthMaxMs: number;
  healthChecks: number;
  /** The longest time the innocent call's far end had nothing to play, between two pieces of audio (ms). */
  gapMaxMs: number;
  /** Audio the innocent call played while watched (ms). */
  playedMs: number;
  /** The most RSS grew above where it started (bytes). */
  rssGrowthMax: number;
  /** RSS at the end, above where it started (bytes). */
  rssGrowthEnd: number;
}

const PROBE_EVERY_MS = 100;
const RSS_EVERY_MS = 50;
/** About a minute of speech: the innocent call is still talking when the attack is over. */
const ANSWER = Array.from(
  { length: 12 },
  (_, i) => `This is sentence ${i + 1} of an answer that has nothing to do with the attack next door.`,
).join(' ');

export class Bystander {
  private probing = true;
  private readonly healthMs: number[] = [];
  private rssMax: number;
  private readonly rssStart: number;
  private readonly probe: Promise<void>;
  private readonly rssTimer: NodeJS.Timeout;
  private readonly gapsBefore: number;
  private readonly playedBefore: number;

  private constructor(
    private readonly appUrl: string,
    readonly call: FakeTwilio,
  ) {
    this.rssStart = process.memoryUsage().rss;
    this.rssMax = this.rssStart;
    this.rssTimer = setInterval(() => {
      this.rssMax = Math.max(this.rssMax, process.memoryUsage().rss);
    }, RSS_EVERY_MS);
    this.gapsBefore = call.playout.gaps.length;
    this.playedBefore = call.playout.playedMs;
    this.probe = (async () => {
      while (this.probing) {
        const started = performance.now();
        try {
          const res = await fetch(`${this.appUrl}/healthz`, { signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
        } finally {
          this.healthMs.push(performance.now() - started);
        }
        await new Promise((r) => setTimeout(r, PROBE_EVERY_MS));
      }
    })();
  }

  /**
   * A call on `appUrl` (an app whose default flow is none) that starts speaking a long answer; watching
   * begins once its audio flows.
   */
  static async start(appUrl: string): Promise<Bystander> {
    const call = new FakeTwilio(`${appUrl.replace('http:', 'ws:')}/media/twilio`);
    await call.start();
    const res = await fetch(`${appUrl}/calls/${call.callSid}/say`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: ANSWER, wait: false }),
    });
    if (res.status !== 202) throw new Error(`the bystander's say was answered ${res.status}`);
    await call.until(() => call.playout.playedMs > 500, 15_000, "the bystander's first audio");
    return new Bystander(appUrl, call);
  }

  /** Stops watching (the call goes on until `close`). */
  async report(): Promise<BystanderReport> {
    this.probing = false;
    await this.probe;
    clearInterval(this.rssTimer);
    const gaps = this.call.playout.gaps.slice(this.gapsBefore);
    const rssEnd = process.memoryUsage().rss;
    return {
      healthMaxMs: Math.max(...this.healthMs),
      healthChecks: this.healthMs.length,
      gapMaxMs: Math.max(0, ...gaps),
      playedMs: this.call.playout.playedMs - this.playedBefore,
      rssGrowthMax: Math.max(this.rssMax, rssEnd) - this.rssStart,
      rssGrowthEnd: rssEnd - this.rssStart,
    };
  }

  async close(): Promise<void> {
    this.probing = false;
    clearInterval(this.rssTimer);
    await this.probe;
    await this.call.close();
  }
}
