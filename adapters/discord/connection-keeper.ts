/**
 * Keeps one guild's voice connection alive, or ends it with a reason. @discordjs/voice reconnects by
 * itself after most socket closes; what it leaves to us:
 * - close code 4014 (and a removed endpoint) means kicked, moved, or the region changed. A move or a
 *   region change is followed by new voice state/server updates within seconds, which the library
 *   follows on its own; if none come within `settleMs` it was a kick (or the channel was deleted).
 * - an adapter that cannot send (the shard is down), and attempts that never reach Ready: rejoin with
 *   exponential backoff, and give up after `maxAttempts` in a row.
 * - a connection destroyed from outside (discord.js destroys a shard's voice adapters when the shard
 *   disconnects) ends as `lost`, so the owner frees its player and may rejoin once the shard is back.
 */
import { EventEmitter } from 'node:events';
import {
  VoiceConnectionDisconnectReason,
  VoiceConnectionStatus,
  type VoiceConnectionState,
} from '@discordjs/voice';

export interface ReconnectPolicy {
  /** Rejoins tried in a row before giving up. */
  maxAttempts: number;
  /** Delay before the first rejoin; doubles with every attempt up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** After a 4014 close or a removed endpoint: time for a move or a region change to show up. */
  settleMs: number;
  /** Signalling or connecting longer than this is a failed attempt. */
  readyTimeoutMs: number;
}

export const DEFAULT_RECONNECT: ReconnectPolicy = {
  maxAttempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  settleMs: 5000,
  readyTimeoutMs: 20_000,
};

/** Why a connection ended. */
export type EndReason =
  | { kind: 'left' }
  | { kind: 'kicked' }
  | { kind: 'gave-up'; attempts: number; lastProblem: string }
  /** Destroyed from outside: the shard's adapter went away. */
  | { kind: 'lost' };

/** What the keeper needs of a `VoiceConnection`. */
export interface KeptConnection {
  readonly state: VoiceConnectionState;
  rejoin(): boolean;
  destroy(): void;
  on(
    event: 'stateChange',
    listener: (oldState: VoiceConnectionState, newState: VoiceConnectionState) => void,
  ): unknown;
  off(
    event: 'stateChange',
    listener: (oldState: VoiceConnectionState, newState: VoiceConnectionState) => void,
  ): unknown;
}

export interface KeeperEvents {
  ready: [];
  reconnecting: [{ attempt: number; delayMs: number; problem: string }];
  ended: [EndReason];
}

export function describeState(state: VoiceConnectionState): string {
  if (state.status !== VoiceConnectionStatus.Disconnected) return state.status;
  switch (state.reason) {
    case VoiceConnectionDisconnectReason.WebSocketClose:
      return `voice socket closed (${state.closeCode})`;
    case VoiceConnectionDisconnectReason.AdapterUnavailable:
      return 'the gateway connection (shard) is unavailable';
    case VoiceConnectionDisconnectReason.EndpointRemoved:
      return 'the voice server went away';
    case VoiceConnectionDisconnectReason.Manual:
      return 'disconnected';
  }
}

export class ConnectionKeeper extends EventEmitter<KeeperEvents> {
  private attempts = 0;
  private timer: NodeJS.Timeout | undefined;
  private ending: EndReason | undefined;
  private ended = false;
  private connectingSince: number | undefined;
  private readonly listener = (_old: VoiceConnectionState, next: VoiceConnectionState): void =>
    this.onState(next);

  constructor(
    private readonly connection: KeptConnection,
    private readonly policy: ReconnectPolicy,
  ) {
    super();
    connection.on('stateChange', this.listener);
    this.onState(connection.state);
  }

  /** Rejoins in a row since the last Ready. */
  get failedAttempts(): number {
    return this.attempts;
  }

  /** Leaves on purpose (/leave, shutdown). */
  leave(): void {
    this.finish({ kind: 'left' });
  }

  private onState(state: VoiceConnectionState): void {
    switch (state.status) {
      case VoiceConnectionStatus.Ready:
        this.clearTimer();
        this.connectingSince = undefined;
        this.attempts = 0;
        this.emit('ready');
        return;
      case VoiceConnectionStatus.Signalling:
      case VoiceConnectionStatus.Connecting:
        // One deadline for the whole way to Ready: signalling → connecting → (a resume) → … does not
        // restart it, so a connection that flaps without ever being ready still counts as failing.
        if (this.connectingSince !== undefined) return;
        this.clearTimer();
        this.connectingSince = performance.now();
        this.timer = setTimeout(() => {
          this.connectingSince = undefined;
          this.retry(`not ready after ${this.policy.readyTimeoutMs} ms`);
        }, this.policy.readyTimeoutMs);
        return;
      case VoiceConnectionStatus.Disconnected:
        this.clearTimer();
        this.connectingSince = undefined;
        if (
          (state.reason === VoiceConnectionDisconnectReason.WebSocketClose && state.closeCode === 4014) ||
          state.reason === VoiceConnectionDisconnectReason.EndpointRemoved
        ) {
          // A move or a region change brings new updates, and the library connects again by itself.
          this.timer = setTimeout(() => this.finish({ kind: 'kicked' }), this.policy.settleMs);
        } else if (state.reason !== VoiceConnectionDisconnectReason.Manual) {
          this.retry(describeState(state));
        }
        return;
      case VoiceConnectionStatus.Destroyed:
        this.clearTimer();
        this.connection.off('stateChange', this.listener);
        if (!this.ended) {
          this.ended = true;
          this.emit('ended', this.ending ?? { kind: 'lost' });
        }
        return;
    }
  }

  private retry(problem: string): void {
    if (this.attempts >= this.policy.maxAttempts) {
      this.finish({ kind: 'gave-up', attempts: this.attempts, lastProblem: problem });
      return;
    }
    const delayMs = Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** this.attempts);
    this.attempts++;
    this.emit('reconnecting', { attempt: this.attempts, delayMs, problem });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.connection.state.status === VoiceConnectionStatus.Destroyed) return;
      // rejoin() moves to Signalling (whose ready timeout counts the attempt) or, when the adapter
      // cannot send, to Disconnected again, which schedules the next attempt.
      this.connection.rejoin();
    }, delayMs);
  }

  private finish(reason: EndReason): void {
    this.clearTimer();
    this.ending ??= reason;
    if (this.connection.state.status !== VoiceConnectionStatus.Destroyed) this.connection.destroy();
  }

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
