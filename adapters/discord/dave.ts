/**
 * What voxbridge reads of DAVE, Discord's end-to-end encryption of voice (docs/discord.md, "End-to-end
 * encryption (DAVE)"): the session a connection is using, and what that session does, in the guild's
 * log.
 *
 * The log listens to the DAVE session itself (`connection.state.networking.state.dave`, which always
 * emits its 'debug' messages), not to `joinVoiceChannel({ debug: true })`: that option turns on the
 * whole networking layer's debug output, a string built for every voice WebSocket message in and out
 * (heartbeats included, and the Identify with its session token) and for every state change, only to
 * pick out the DAVE lines. A connection's networking gets a new DAVE session each time it reaches
 * Ready (a join, a reconnect), and a connection gets a new networking for each voice server: the log
 * follows the connection's 'stateChange' to its networking, and the networking's to its session (the
 * connection alone would miss a session made while it is signalling).
 */
import {
  NetworkingStatusCode,
  type DAVESession,
  type Networking,
  type NetworkingState,
  type VoiceConnectionState,
} from '@discordjs/voice';
import type { Logger } from 'pino';
import type { KeptConnection } from './connection-keeper.js';

/** The end-to-end encryption of a guild's voice, as `GET /discord/guilds/{id}` shows it. */
export interface E2eeState {
  /** The DAVE protocol version in use; 0: transport encryption only (or not connected). */
  protocolVersion: number;
  /**
   * The channel's voice privacy code, the one Discord's clients show for the call; null until the
   * MLS group is established.
   */
  voicePrivacyCode: string | null;
}

/** A connection's networking, in every state that has one. */
function networkingOf(state: VoiceConnectionState): Networking | undefined {
  return 'networking' in state ? state.networking : undefined;
}

/** A networking's DAVE session: there is one while it is Ready or Resuming. */
function daveOf(state: NetworkingState): DAVESession | undefined {
  return state.code === NetworkingStatusCode.Ready || state.code === NetworkingStatusCode.Resuming
    ? state.dave
    : undefined;
}

/** A connection's DAVE session, if it has one now. */
export function daveSessionOf(state: VoiceConnectionState): DAVESession | undefined {
  const networking = networkingOf(state);
  return networking && daveOf(networking.state);
}

/** What the DAVE log needs of a `VoiceConnection`: its state and state changes, as the keeper's. */
export type DaveConnection = Pick<KeptConnection, 'state' | 'on' | 'off'>;

/**
 * One "Failed to decrypt a packet" line a second at most: the session says it for every packet it
 * cannot decrypt (50 a second for each member talking), up to its tolerance and through a re-key.
 */
export const DECRYPT_FAILURE_LOG_INTERVAL_MS = 1000;

/**
 * How @discordjs/voice 0.19's `DAVESession` words what it does (it has no events for most of it).
 * A line no entry matches is logged at debug level, so a change of wording only lowers a level.
 */
type Kind = 'decryptFailure' | 'invalidating' | 'errored' | 'reinitialized' | 'other';
const KINDS: ReadonlyArray<readonly [RegExp, Kind]> = [
  [/^Failed to decrypt a packet/, 'decryptFailure'],
  [/^Invalidating transition (\d+)/, 'invalidating'],
  [/^MLS (commit|welcome) errored/, 'errored'],
  [/^Session reinitialized/, 'reinitialized'],
];

/**
 * Logs the DAVE sessions of `connection` to `logger` until the returned function is called: every
 * line at debug level (decryption failures one a second, with how many were left out), and a re-key
 * (the session gives up on its group state and asks the voice gateway to be added afresh) at warn.
 * A re-key makes the session reinitialize at once: that line is part of the re-key's warning.
 */
export function logDave(
  connection: DaveConnection,
  logger: Logger,
  nowMs: () => number = () => performance.now(),
): () => void {
  let networking: Networking | undefined;
  let session: DAVESession | undefined;
  let lastKind: Kind = 'other';
  let failureLoggedAtMs = -Infinity;
  let failuresLeftOut = 0;

  const onDebug = (message: string): void => {
    const kind = KINDS.find(([pattern]) => pattern.test(message))?.[1] ?? 'other';
    const previous = lastKind;
    lastKind = kind;
    switch (kind) {
      case 'decryptFailure': {
        const now = nowMs();
        if (now - failureLoggedAtMs < DECRYPT_FAILURE_LOG_INTERVAL_MS) {
          failuresLeftOut++;
          return;
        }
        logger.debug({ leftOut: failuresLeftOut }, `DAVE: ${message}`);
        failureLoggedAtMs = now;
        failuresLeftOut = 0;
        return;
      }
      case 'invalidating': {
        const transitionId = Number(/(\d+)/.exec(message)?.[1]);
        const why =
          previous === 'errored' ? "the voice gateway's MLS message failed" : 'decryption kept failing';
        logger.warn({ transitionId }, `DAVE: ${why}; re-keying (transition ${transitionId})`);
        return;
      }
      case 'errored':
        logger.warn(`DAVE: ${message}`);
        return;
      case 'reinitialized':
        if (previous === 'invalidating') logger.debug(`DAVE: ${message}`);
        else logger.warn(`DAVE: ${message}`);
        return;
      case 'other':
        logger.debug(`DAVE: ${message}`);
    }
  };

  const followSession = (next: DAVESession | undefined): void => {
    if (next === session) return;
    session?.off('debug', onDebug);
    session = next;
    lastKind = 'other';
    if (!session) return;
    // Its first lines (initialized, its key package) came before the connection's state change.
    logger.debug(`DAVE: session for protocol version ${session.protocolVersion}`);
    session.on('debug', onDebug);
  };
  const onNetworkingState = (_old: NetworkingState, state: NetworkingState): void =>
    followSession(daveOf(state));
  const onConnectionState = (_old: VoiceConnectionState, state: VoiceConnectionState): void => {
    const next = networkingOf(state);
    if (next !== networking) {
      networking?.off('stateChange', onNetworkingState);
      networking = next;
      networking?.on('stateChange', onNetworkingState);
    }
    followSession(networking && daveOf(networking.state));
  };

  connection.on('stateChange', onConnectionState);
  onConnectionState(connection.state, connection.state);
  return () => {
    connection.off('stateChange', onConnectionState);
    networking?.off('stateChange', onNetworkingState);
    session?.off('debug', onDebug);
    networking = undefined;
    session = undefined;
  };
}

/** The e2ee state of a connection: its DAVE session's protocol version and voice privacy code. */
export function e2eeOf(connection: {
  readonly state: VoiceConnectionState;
  readonly voicePrivacyCode: string | undefined;
}): E2eeState {
  return {
    protocolVersion: daveSessionOf(connection.state)?.protocolVersion ?? 0,
    voicePrivacyCode: connection.voicePrivacyCode ?? null,
  };
}
