/**
 * One `RelaySession` against a real `ws` server playing the app, its host a small implementation of the
 * `RelayHost` port that records what it was asked to say (the unit tests of test/unit/relay/).
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { rawText } from '../../src/http/ws-data.js';
import {
  RelaySession,
  type RelayHost,
  type RelayLimits,
  type RelayOutcome,
  type RelaySettings,
} from '../../src/relay/session.js';
import type { InterruptResult, UtteranceHandle, UtteranceResult } from '../../src/speaker/speaker.js';
import type { AudioInput } from '../../src/speaker/utterance.js';
import { until } from './relay-app.js';

export type Message = Record<string, unknown> & { type: string };

/**
 * A host that takes what it is asked to say, and starts each utterance being heard (`heard()`) and
 * ends it (`end()`) when the test says so; ended unheard, its `audible` says false.
 */
export class RecordingHost implements RelayHost {
  readonly setup = {
    callSid: 'CA-hardening',
    from: '+15550000001',
    to: '+15550000002',
    direction: 'inbound',
    callType: 'PSTN',
    customParameters: {},
    voxbridge: { gateway: 'twilio' },
  };
  readonly said: Array<{
    tokens: string[];
    /** The listener begins to hear it. */
    heard: () => void;
    end: (r?: Partial<UtteranceResult>) => void;
    voiceId: string | undefined;
    /** A `play`'s audio, as the host was given it (still being fetched). */
    audio: Promise<Uint8Array> | undefined;
    /** How often it is to be played. */
    repeat: number | undefined;
  }> = [];
  readonly digits: string[] = [];
  /** Resolves every `sendDigits` in flight. */
  private digitsPlayed: Array<() => void> = [];
  interruptThrows = false;
  private next = 0;

  say(
    text: AsyncIterable<string> | AudioInput,
    options: { voiceId?: string | undefined } = {},
  ): UtteranceHandle {
    const tokens: string[] = [];
    let end!: (r?: Partial<UtteranceResult>) => void;
    let audibleAs!: (heard: boolean) => void;
    const audible = new Promise<boolean>((resolve) => (audibleAs = resolve));
    const result = new Promise<UtteranceResult>((resolve) => {
      end = (r = {}) => {
        // As the speaker's handles do: `audible` settles first.
        audibleAs(false);
        resolve({
          status: 'played',
          playedMs: 0,
          heardText: '',
          metrics: {
            firstByteMs: undefined,
            firstFrameMs: undefined,
            underruns: 0,
            cachedSegments: 0,
            requestedSegments: 0,
          },
          ...r,
        });
      };
    });
    void (async () => {
      if ('audio' in text) return;
      for await (const t of text) tokens.push(t);
    })();
    const audio = 'audio' in text ? Promise.resolve(text.audio) : undefined;
    audio?.catch(() => undefined);
    const repeat = 'audio' in text ? text.repeat : undefined;
    this.said.push({ tokens, heard: () => audibleAs(true), end, voiceId: options.voiceId, audio, repeat });
    return { id: `u${this.next++}`, audible, result };
  }

  interrupt(): InterruptResult {
    if (this.interruptThrows) throw new Error('the host broke');
    return { interrupted: false, playedMs: 0, heardText: '' };
  }

  readonly sendDigits = (digits: string): Promise<void> => {
    this.digits.push(digits);
    return new Promise<void>((resolve) => this.digitsPlayed.push(resolve));
  };

  playDigits(): void {
    for (const r of this.digitsPlayed.splice(0)) r();
  }
}

export interface AppSide {
  socket: WebSocket;
  received: Message[];
  closed: Promise<number>;
}

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    for (const c of s.clients) c.terminate();
    await new Promise((r) => s.close(r));
  }
});

export async function open(
  limits: Partial<RelayLimits> = {},
  host = new RecordingHost(),
  settings: {
    twilioAuthToken?: string;
    path?: string;
    voiceId?: string;
    languages?: Record<string, { voiceId: string }>;
    play?: RelaySettings['play'];
    events?: RelaySettings['events'];
    welcome?: string;
  } = {},
): Promise<{
  session: RelaySession;
  host: RecordingHost;
  app: AppSide;
  outcome: Promise<RelayOutcome>;
  url: string;
  handshake: IncomingMessage;
}> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(server);
  await once(server, 'listening');
  const connected = once(server, 'connection') as Promise<[WebSocket, IncomingMessage]>;
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}${settings.path ?? '/'}`;
  const session = new RelaySession(
    host,
    {
      url,
      twilioAuthToken: settings.twilioAuthToken,
      headers: {},
      welcome: settings.welcome,
      welcomeInterruptible: undefined,
      interruptible: 'any',
      dtmf: true,
      voiceId: settings.voiceId,
      languages: settings.languages,
      play: settings.play,
      events: settings.events,
      connectTimeoutMs: 5000,
      limits,
    },
    pino({ level: 'silent' }),
  );
  const outcome = session.start();
  const [socket, handshake] = await connected;
  const received: Message[] = [];
  socket.on('message', (d) => received.push(JSON.parse(rawText(d)) as Message));
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
  await until(() => received.some((m) => m.type === 'setup'), 5000, 'setup');
  return { session, host, app: { socket, received, closed }, outcome, url, handshake };
}

export const send = (app: AppSide, m: unknown): void => app.socket.send(JSON.stringify(m));
export const errors = (app: AppSide): string[] =>
  app.received.filter((m) => m.type === 'error').map((m) => String(m['description']));
