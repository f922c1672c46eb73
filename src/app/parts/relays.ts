/**
 * The relay apps of the config (`relays:`) and the speech-to-text client their prompts go through
 * (`stt:`), built once and given to both parts that hand a conversation to a relay app: a call's flow
 * (parts/calls.ts) and a Discord guild (parts/discord.ts). One client means one keep-alive pool to the
 * speech-to-text service for every call and guild; the app closes it after both parts.
 */
import type { Logger } from 'pino';
import { parseRelayInfoOptions } from '../../protocols/conversation-relay.js';
import { DEFAULT_BACKCHANNELS } from '../../relay/backchannel.js';
import type { RelaySettings } from '../../relay/session.js';
import type { TurnStt } from '../../relay/turn-stt.js';
import { RealtimeSttClient } from '../../speech/stt-realtime.js';
import { SttClient } from '../../speech/stt.js';
import type { LoadedConfig } from '../config.js';

export interface Relays {
  /** By name, as `relays:` has them, with their headers' `env:` values read. */
  readonly settings: Readonly<Record<string, RelaySettings>>;
  /**
   * Speech-to-text for prompts (batch, and realtime in realtime mode); undefined when no service is
   * set (relays run without prompts).
   */
  readonly stt: TurnStt | undefined;
  /** Silence after the speaker's words that ends their turn (ms). */
  readonly endOfTurnMs: number;
  close(): Promise<void>;
}

/** Each relay of the config as a `RelaySession` takes it; `debug` words it does not know are logged once. */
export function relaySettings(loaded: LoadedConfig, log?: Logger): Record<string, RelaySettings> {
  const { config, secrets } = loaded;
  return Object.fromEntries(
    Object.entries(config.relays).map(([name, r]) => {
      const { options: events, unknown } = parseRelayInfoOptions(r.debug);
      if (unknown.length > 0)
        log?.warn(
          { relay: name, unknown },
          'relay debug options not known (speaker-events, tokens-played, debugging): ignored',
        );
      return [
        name,
        {
          url: r.url,
          headers: secrets.relayHeaders.get(name) ?? {},
          welcome: r.welcome,
          welcomeInterruptible: r.welcomeInterruptible,
          interruptible: r.interruptible,
          dtmf: r.dtmf,
          voiceId: r.voiceId,
          languages: r.languages,
          play: r.play,
          connectTimeoutMs: r.connectTimeoutMs,
          twilioAuthToken: secrets.twilioAuthToken,
          events,
          partialPrompts: r.partialPrompts,
          backchannels:
            r.backchannels === true ? DEFAULT_BACKCHANNELS : r.backchannels === false ? [] : r.backchannels,
        },
      ];
    }),
  );
}

export function startRelays(loaded: LoadedConfig, log?: Logger): Relays {
  const { config, secrets } = loaded;
  const { stt: c } = config;
  const batch =
    c.baseUrl === null
      ? undefined
      : new SttClient({
          baseUrl: c.baseUrl,
          pathPrefix: c.pathPrefix,
          authHeader: c.authHeader,
          apiKey: secrets.sttApiKey ?? '',
          modelId: c.modelId,
        });
  const realtimeBase = c.realtime.baseUrl ?? c.baseUrl;
  const realtime =
    c.mode === 'realtime' && realtimeBase !== null
      ? new RealtimeSttClient({
          baseUrl: realtimeBase,
          pathPrefix: c.pathPrefix,
          authHeader: c.authHeader,
          apiKey: secrets.sttApiKey ?? '',
          modelId: c.realtime.modelId,
          connectTimeoutMs: c.realtime.connectTimeoutMs,
          commitTimeoutMs: c.realtime.commitTimeoutMs,
          ...(log ? { log: log.child({ part: 'stt-realtime' }) } : {}),
        })
      : undefined;
  if (c.mode === 'realtime' && !realtime)
    log?.warn('stt.mode is realtime but no speech-to-text service is set: relays run without prompts');
  const stt: TurnStt | undefined =
    batch || realtime
      ? {
          batch,
          realtime,
          endpointing: c.endpointing,
          preRollMs: c.realtime.preRollMs,
          maxTurnMs: c.realtime.maxTurnMs,
          endOfTurnMs: c.endOfTurnMs,
        }
      : undefined;
  return {
    settings: relaySettings(loaded, log),
    stt,
    endOfTurnMs: c.endOfTurnMs,
    close: async () => {
      await Promise.all([batch?.close(), realtime?.close()]);
    },
  };
}
