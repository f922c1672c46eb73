/**
 * What the guild's log says about DAVE: the library's DAVE session lines at debug, decryption
 * failures one a second, a re-key at warn; the log follows the connection to each new DAVE session;
 * the e2ee state reads the session's protocol version and the connection's voice privacy code.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import {
  DAVESession,
  NetworkingStatusCode,
  VoiceConnectionStatus,
  type NetworkingState,
  type VoiceConnectionState,
} from '@discordjs/voice';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  DECRYPT_FAILURE_LOG_INTERVAL_MS,
  e2eeOf,
  logDave,
  type DaveConnection,
} from '../../../adapters/discord/dave.js';

interface Line {
  level: number;
  msg: string;
  transitionId?: number;
  leftOut?: number;
}
const DEBUG = 20;
const WARN = 40;

function capture(): { logger: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as Line);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

/** A networking whose state the test sets: Ready with a DAVE session, or opening its WebSocket. */
class FakeNetworking extends EventEmitter {
  state: NetworkingState = { code: NetworkingStatusCode.OpeningWs } as NetworkingState;

  set(dave: DAVESession | undefined): void {
    const old = this.state;
    this.state = (
      dave ? { code: NetworkingStatusCode.Ready, dave } : { code: NetworkingStatusCode.OpeningWs }
    ) as NetworkingState;
    this.emit('stateChange', old, this.state);
  }
}

/** A connection whose state the test sets: Ready on a networking, or signalling without one. */
class FakeConnection extends EventEmitter implements DaveConnection {
  state: VoiceConnectionState = { status: VoiceConnectionStatus.Signalling } as VoiceConnectionState;
  voicePrivacyCode: string | undefined = undefined;

  override on(event: 'stateChange', listener: (a: VoiceConnectionState, b: VoiceConnectionState) => void) {
    return super.on(event, listener);
  }

  override off(event: 'stateChange', listener: (a: VoiceConnectionState, b: VoiceConnectionState) => void) {
    return super.off(event, listener);
  }

  /** A new networking (a new voice server), Ready with `dave`; or none (signalling). */
  set(dave: DAVESession | undefined): FakeNetworking | undefined {
    const networking = dave ? new FakeNetworking() : undefined;
    networking?.set(dave);
    this.to(networking);
    return networking;
  }

  to(networking: FakeNetworking | undefined): void {
    const old = this.state;
    this.state = (
      networking
        ? { status: VoiceConnectionStatus.Ready, networking }
        : { status: VoiceConnectionStatus.Signalling }
    ) as VoiceConnectionState;
    this.emit('stateChange', old, this.state);
  }
}

/** The library's DAVE session, saying what 0.19.2 says (its messages, verbatim). */
function session(): DAVESession {
  return new DAVESession(1, '100000000000000001', '200000000000000001', {});
}

/** Lets pino's stream deliver what was written. */
const flushed = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the DAVE log', () => {
  it('logs the session at debug and a re-key after decryption failures at warn, once', async () => {
    const { logger, lines } = capture();
    const connection = new FakeConnection();
    let nowMs = 0;
    const stop = logDave(connection, logger, () => nowMs);
    const dave = session();
    const networking = connection.set(dave)!;
    dave.emit('debug', 'Set MLS external sender');
    dave.emit('debug', 'MLS commit processed (transition id: 0)');
    // 37 failures in 20 ms steps (0.74 s), then a second run a second later.
    for (let n = 1; n <= 37; n++, nowMs += 20)
      dave.emit('debug', `Failed to decrypt a packet (${n} consecutive fails)`);
    dave.emit('debug', 'Invalidating transition 0');
    dave.emit('debug', 'Session reinitialized for protocol version 1');
    nowMs += DECRYPT_FAILURE_LOG_INTERVAL_MS;
    dave.emit('debug', 'Failed to decrypt a packet (reinitializing session)');
    await flushed();

    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [DEBUG, 'DAVE: session for protocol version 1'],
      [DEBUG, 'DAVE: Set MLS external sender'],
      [DEBUG, 'DAVE: MLS commit processed (transition id: 0)'],
      [DEBUG, 'DAVE: Failed to decrypt a packet (1 consecutive fails)'],
      [WARN, 'DAVE: decryption kept failing; re-keying (transition 0)'],
      [DEBUG, 'DAVE: Session reinitialized for protocol version 1'],
      [DEBUG, 'DAVE: Failed to decrypt a packet (reinitializing session)'],
    ]);
    expect(lines[4]!.transitionId).toBe(0);
    expect(lines.at(-1)!.leftOut).toBe(36);

    stop();
    dave.emit('debug', 'Invalidating transition 3');
    await flushed();
    expect(lines).toHaveLength(7);
    expect(connection.listenerCount('stateChange')).toBe(0);
    expect(networking.listenerCount('stateChange')).toBe(0);
  });

  it('says why a re-key after a failed commit, and warns of a reinitialization of its own', async () => {
    const { logger, lines } = capture();
    const connection = new FakeConnection();
    logDave(connection, logger);
    const dave = session();
    connection.set(dave);
    dave.emit('debug', 'MLS commit errored from transition 5: Error: invalid commit');
    dave.emit('debug', 'Invalidating transition 5');
    dave.emit('debug', 'Session reinitialized for protocol version 1');
    dave.emit('debug', 'Preparing for epoch (1)');
    dave.emit('debug', 'Session reinitialized for protocol version 1');
    await flushed();
    expect(lines.slice(1).map((l) => [l.level, l.msg])).toEqual([
      [WARN, 'DAVE: MLS commit errored from transition 5: Error: invalid commit'],
      [WARN, "DAVE: the voice gateway's MLS message failed; re-keying (transition 5)"],
      [DEBUG, 'DAVE: Session reinitialized for protocol version 1'],
      [DEBUG, 'DAVE: Preparing for epoch (1)'],
      [WARN, 'DAVE: Session reinitialized for protocol version 1'],
    ]);
  });

  it("follows the connection to each new DAVE session and lets go of the old one's", async () => {
    const { logger, lines } = capture();
    const connection = new FakeConnection();
    logDave(connection, logger);
    const first = session();
    connection.set(first);
    connection.set(undefined); // reconnecting
    const second = session();
    const networking = connection.set(second)!;
    connection.to(networking); // the same networking and session again: attached once
    first.emit('debug', 'Set MLS external sender');
    second.emit('debug', 'Executing transition (2)');
    // The networking reconnects on its own (the connection need not change state): a third session.
    networking.set(undefined);
    const third = session();
    networking.set(third);
    third.emit('debug', 'Preparing for epoch (1)');
    await flushed();
    expect(lines.map((l) => l.msg)).toEqual([
      'DAVE: session for protocol version 1',
      'DAVE: session for protocol version 1',
      'DAVE: Executing transition (2)',
      'DAVE: session for protocol version 1',
      'DAVE: Preparing for epoch (1)',
    ]);
    expect(first.listenerCount('debug')).toBe(0);
    expect(second.listenerCount('debug')).toBe(0);
    expect(third.listenerCount('debug')).toBe(1);
    expect(networking.listenerCount('stateChange')).toBe(1);
    connection.set(undefined);
    expect(networking.listenerCount('stateChange')).toBe(0);
    expect(third.listenerCount('debug')).toBe(0);
  });
});

describe('the e2ee state of a connection', () => {
  it('is protocol 0 and no code without a DAVE session; the session and code with one', () => {
    const connection = new FakeConnection();
    expect(e2eeOf(connection)).toEqual({ protocolVersion: 0, voicePrivacyCode: null });
    connection.set(session());
    connection.voicePrivacyCode = '123456789012345678901234567890';
    expect(e2eeOf(connection)).toEqual({
      protocolVersion: 1,
      voicePrivacyCode: '123456789012345678901234567890',
    });
  });
});
