/**
 * The reconnect rules, driven by fake connection state changes on fake timers: moves and region
 * changes are waited for, kicks end the connection, lost gateways are rejoined with backoff until the
 * limit, a connection destroyed from outside ends as lost.
 */
import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  VoiceConnectionDisconnectReason,
  VoiceConnectionStatus,
  type VoiceConnectionState,
} from '@discordjs/voice';
import {
  ConnectionKeeper,
  type EndReason,
  type KeptConnection,
  type ReconnectPolicy,
} from '../../../adapters/discord/connection-keeper.js';

const POLICY: ReconnectPolicy = {
  maxAttempts: 3,
  baseDelayMs: 1000,
  maxDelayMs: 3000,
  settleMs: 5000,
  readyTimeoutMs: 20_000,
};

/** Only `status` (and a disconnect's reason) matters to the keeper. */
type FakeState =
  | {
      status:
        VoiceConnectionStatus.Ready | VoiceConnectionStatus.Signalling | VoiceConnectionStatus.Connecting;
    }
  | { status: VoiceConnectionStatus.Destroyed }
  | {
      status: VoiceConnectionStatus.Disconnected;
      reason: VoiceConnectionDisconnectReason;
      closeCode?: number;
    };

class FakeConnection extends EventEmitter implements KeptConnection {
  rejoins = 0;
  destroys = 0;
  /** What rejoin() does: reach Signalling (the adapter sent the payload), or fail like a dead shard. */
  adapterUp = true;
  private current: FakeState = { status: VoiceConnectionStatus.Signalling };

  get state(): VoiceConnectionState {
    return this.current as unknown as VoiceConnectionState;
  }
  set(next: FakeState): void {
    const old = this.current;
    this.current = next;
    this.emit('stateChange', old, next);
  }
  rejoin(): boolean {
    this.rejoins++;
    if (this.adapterUp) this.set({ status: VoiceConnectionStatus.Signalling });
    else
      this.set({
        status: VoiceConnectionStatus.Disconnected,
        reason: VoiceConnectionDisconnectReason.AdapterUnavailable,
      });
    return this.adapterUp;
  }
  destroy(): void {
    this.destroys++;
    this.set({ status: VoiceConnectionStatus.Destroyed });
  }
}

function keep(): { conn: FakeConnection; keeper: ConnectionKeeper; ended: EndReason[]; retries: number[] } {
  const conn = new FakeConnection();
  const keeper = new ConnectionKeeper(conn, POLICY);
  const ended: EndReason[] = [];
  const retries: number[] = [];
  keeper.on('ended', (r) => ended.push(r));
  keeper.on('reconnecting', (r) => retries.push(r.delayMs));
  conn.set({ status: VoiceConnectionStatus.Ready });
  return { conn, keeper, ended, retries };
}

describe('ConnectionKeeper', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits for a move after a 4014 close: the library reconnecting in time keeps the connection', () => {
    const { conn, ended } = keep();
    conn.set({
      status: VoiceConnectionStatus.Disconnected,
      reason: VoiceConnectionDisconnectReason.WebSocketClose,
      closeCode: 4014,
    });
    vi.advanceTimersByTime(2000);
    conn.set({ status: VoiceConnectionStatus.Connecting });
    conn.set({ status: VoiceConnectionStatus.Ready });
    vi.advanceTimersByTime(60_000);
    expect(ended).toEqual([]);
    expect(conn.destroys).toBe(0);
    expect(conn.rejoins).toBe(0);
  });

  it('a 4014 close with nothing after it within settleMs is a kick: destroyed, ended as kicked', () => {
    const { conn, ended } = keep();
    conn.set({
      status: VoiceConnectionStatus.Disconnected,
      reason: VoiceConnectionDisconnectReason.WebSocketClose,
      closeCode: 4014,
    });
    vi.advanceTimersByTime(4999);
    expect(conn.destroys).toBe(0);
    vi.advanceTimersByTime(1);
    expect(conn.destroys).toBe(1);
    expect(ended).toEqual([{ kind: 'kicked' }]);
    expect(conn.rejoins).toBe(0);
  });

  it('a region change (endpoint removed, then a new one) is followed, not counted as a failure', () => {
    const { conn, ended, keeper } = keep();
    conn.set({
      status: VoiceConnectionStatus.Disconnected,
      reason: VoiceConnectionDisconnectReason.EndpointRemoved,
    });
    vi.advanceTimersByTime(1500);
    conn.set({ status: VoiceConnectionStatus.Connecting });
    vi.advanceTimersByTime(500);
    conn.set({ status: VoiceConnectionStatus.Ready });
    vi.advanceTimersByTime(30_000);
    expect(ended).toEqual([]);
    expect(keeper.failedAttempts).toBe(0);
  });

  it('rejoins a lost gateway with exponential backoff, and gives up after maxAttempts with the problem', () => {
    const { conn, ended, retries } = keep();
    conn.adapterUp = false;
    conn.set({
      status: VoiceConnectionStatus.Disconnected,
      reason: VoiceConnectionDisconnectReason.AdapterUnavailable,
    });
    // 1 s, 2 s, then 3 s (capped): three rejoins, each failing at once.
    vi.advanceTimersByTime(999);
    expect(conn.rejoins).toBe(0);
    vi.advanceTimersByTime(1);
    expect(conn.rejoins).toBe(1);
    vi.advanceTimersByTime(2000);
    expect(conn.rejoins).toBe(2);
    vi.advanceTimersByTime(3000);
    expect(conn.rejoins).toBe(3);
    expect(retries).toEqual([1000, 2000, 3000]);
    expect(conn.destroys).toBe(1);
    expect(ended).toEqual([
      { kind: 'gave-up', attempts: 3, lastProblem: 'the gateway connection (shard) is unavailable' },
    ]);
  });

  it('a rejoin that reaches Ready resets the count', () => {
    const { conn, ended, keeper } = keep();
    conn.adapterUp = false;
    conn.set({
      status: VoiceConnectionStatus.Disconnected,
      reason: VoiceConnectionDisconnectReason.AdapterUnavailable,
    });
    vi.advanceTimersByTime(1000 + 2000);
    // Two rejoins failed; the third is scheduled.
    expect(conn.rejoins).toBe(2);
    expect(keeper.failedAttempts).toBe(3);
    conn.adapterUp = true;
    vi.advanceTimersByTime(3000);
    expect(conn.rejoins).toBe(3);
    conn.set({ status: VoiceConnectionStatus.Connecting });
    conn.set({ status: VoiceConnectionStatus.Ready });
    expect(keeper.failedAttempts).toBe(0);
    expect(conn.destroys).toBe(0);
    expect(ended).toEqual([]);
  });

  it('connecting that never reaches Ready times out as one attempt, even when it keeps changing state', () => {
    const { conn, keeper, retries } = keep();
    // The library's own reconnect after a 1006: signalling, connecting, signalling… never ready.
    conn.set({ status: VoiceConnectionStatus.Signalling });
    vi.advanceTimersByTime(10_000);
    conn.set({ status: VoiceConnectionStatus.Connecting });
    vi.advanceTimersByTime(9999);
    expect(retries).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(retries).toEqual([1000]);
    expect(keeper.failedAttempts).toBe(1);
    vi.advanceTimersByTime(1000);
    expect(conn.rejoins).toBe(1);
  });

  it('a connection destroyed from outside (the shard went away) ends as lost; leave() ends as left', () => {
    const first = keep();
    first.conn.set({ status: VoiceConnectionStatus.Destroyed });
    expect(first.ended).toEqual([{ kind: 'lost' }]);
    const second = keep();
    second.keeper.leave();
    expect(second.conn.destroys).toBe(1);
    expect(second.ended).toEqual([{ kind: 'left' }]);
    // Nothing is left scheduled.
    expect(vi.getTimerCount()).toBe(0);
  });
});
