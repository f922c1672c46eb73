/**
 * The calls part: the media-stream endpoints (`/media/<gateway>`, on the server's upgrades) and the
 * control API at `/calls`, configured from `calls.*` and `flows`, with one voice-activity model for
 * every call's barge-in, one recogniser for every call's spoken answers to a flow's gathers, the
 * gateways' call control (hang-ups at the gateway, transfers, outbound calls placed with `POST /calls`
 * whose streams come back here), and one log line per call event.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { bargeInDetectors } from '../../../adapters/media-stream/barge-in.js';
import type { CallEvent } from '../../../adapters/media-stream/call-events.js';
import type { Call } from '../../../adapters/media-stream/call.js';
import { controlApi } from '../../../adapters/media-stream/control-api.js';
import { MediaStreamServer, type UpgradeGuard } from '../../../adapters/media-stream/server.js';
import { OutboundCalls } from '../../../adapters/media-stream/outbound-calls.js';
import { AmdCallbacks, GATEWAY_AMD_WINDOW_MS } from '../../../adapters/media-stream/amd-callbacks.js';
import { twilioAmdReader } from '../../../adapters/media-stream/amd-verdict.js';
import { startCallControl } from './call-control.js';
import { designResampler } from '../../audio/resampler.js';
import {
  inThreadDetectors,
  SileroModel,
  WASM_FALLBACK_LOG,
  startVadWorkers,
  type DetectorSource,
  type VadWorkerPool,
} from '../../barge-in/index.js';
import type { Route } from '../../http/router.js';
import { PROTOCOLS } from '../../protocols/index.js';
import type { GatewayName, GatewayProtocol } from '../../protocols/types.js';
import { systemClock } from '../../speaker/clock.js';
import type { PhraseCache } from '../../speaker/phrase-cache.js';
import { SPEAKER_SAMPLE_RATE, type SpeechSource } from '../../speaker/segment-audio.js';
import type { LoadedConfig } from '../config.js';
import type { RecognitionPart } from './recognition.js';
import type { Relays } from './relays.js';

/** Sink rates of phone calls: G.711 (8 kHz) and wideband L16 (16 kHz). */
const CALL_OUTPUT_RATES = [8000, 16_000];

export interface CallsPart {
  readonly calls: MediaStreamServer;
  readonly routes: readonly Route[];
  /** The voice-activity model's worker threads; undefined when barge-in is off or runs on the event loop. */
  readonly vadWorkers: VadWorkerPool | undefined;
  close(): Promise<void>;
}

export interface CallsPartOptions {
  loaded: LoadedConfig;
  server: Server;
  guard: UpgradeGuard;
  source: SpeechSource;
  cache: PhraseCache;
  /** The recogniser for spoken answers to gathers, and the speakers' aligner (shared with Discord). */
  recognition: RecognitionPart;
  /** The relay apps a flow's relay node hands a call to, with speech-to-text for prompts (shared with Discord). */
  relays: Relays;
  logger: Logger;
  /** Sends flow webhooks; default fetch. */
  post?: ((url: string, body: unknown, signal: AbortSignal) => Promise<number>) | undefined;
}

export async function startCalls(options: CallsPartOptions): Promise<CallsPart> {
  const { config, secrets } = options.loaded;
  const { bargeIn } = config.calls;
  // Design the resampler filters now (≈ 12 ms each the first time), not in a first call's first frames.
  for (const rate of CALL_OUTPUT_RATES) designResampler(SPEAKER_SAMPLE_RATE, rate);
  const logger = options.logger.child({ part: 'calls' });
  // One voice-activity model for every call, loaded before the first call can arrive: in worker
  // threads, where each call's detector runs whole, so that many calls' pacing never waits for it.
  const vadWorkers =
    bargeIn.enabled && bargeIn.workers !== 0
      ? await startVadWorkers({ workers: bargeIn.workers, logger: logger.child({ part: 'vad' }) })
      : undefined;
  const inThread = vadWorkers || !bargeIn.enabled ? undefined : await SileroModel.load();
  if (inThread?.fallback !== undefined)
    logger.warn({ runtime: inThread.runtime, reason: inThread.fallback }, WASM_FALLBACK_LOG);
  const vad: DetectorSource | undefined = vadWorkers ?? (inThread && inThreadDetectors(inThread));
  // Spoken answers to gathers are the VAD's turns: with barge-in off there are none to hear.
  const listening = [...options.loaded.grammars].flatMap(([flow, nodes]) =>
    [...nodes.keys()].map((n) => `${flow}.${n}`),
  );
  if (listening.length > 0 && vad === undefined)
    logger.warn(
      { gathers: listening },
      'gathers listen for speech, but barge-in is off (calls.bargeIn.enabled): they take keys only',
    );
  const recognizer = listening.length > 0 && vad !== undefined ? options.recognition.recognizer : undefined;
  const protocols: Partial<Record<GatewayName, GatewayProtocol>> = {};
  for (const name of config.calls.gateways) protocols[name] = PROTOCOLS[name];
  const control = startCallControl(options.loaded, logger);
  const { control: controlConfig } = config.calls;
  // The gateways' own machine-detection verdicts, posted here when the app gives no callback_url of its
  // own: Twilio's (signed with TWILIO_AUTH_TOKEN), the only format read so far.
  const amdCallbacks =
    config.server.publicUrl === null
      ? undefined
      : new AmdCallbacks({
          publicUrl: config.server.publicUrl,
          readers:
            config.calls.gateways.includes('twilio') && secrets.twilioAuthToken !== undefined
              ? [twilioAmdReader(secrets.twilioAuthToken)]
              : [],
          ttlMs: controlConfig.answerTimeoutMs + GATEWAY_AMD_WINDOW_MS,
          maxOpen: config.calls.maxCalls,
        });
  const outbound = new OutboundCalls({
    controls: control.controls,
    settings: {
      publicUrl: config.server.publicUrl ?? undefined,
      mediaStreamToken: secrets.mediaStreamToken,
      gateways: config.calls.gateways,
      flows: new Set(Object.keys(config.flows)),
      defaultFlow: config.calls.defaultFlow ?? undefined,
      webhookOf: (flow) => config.flows[flow]?.webhook,
      maxPlacing: controlConfig.maxPlacing,
      maxCalls: config.calls.maxCalls,
      answerTimeoutMs: controlConfig.answerTimeoutMs,
      ringSeconds: controlConfig.ringSeconds,
    },
    clock: systemClock,
    logger: logger.child({ part: 'outbound' }),
    activeCalls: () => calls.list().length,
    post: options.post,
    amdCallbacks,
  });
  const calls: MediaStreamServer = new MediaStreamServer({
    server: options.server,
    guard: options.guard,
    protocols,
    settings: {
      voiceId: config.calls.voiceId,
      leadMs: config.calls.leadMs,
      markIntervalMs: config.calls.markIntervalMs,
      bargeIn: bargeIn.enabled,
      bargeInResume: bargeIn.resume,
      defaultFlow: config.calls.defaultFlow ?? undefined,
      flows: config.flows,
      grammars: options.loaded.grammars,
      protocolOptions: Object.fromEntries(
        Object.entries(config.calls.formats).map(([g, { l16ByteOrder, ...f }]) => [
          g,
          { outbound: { ...f, channels: 1 as const }, ...(l16ByteOrder ? { l16ByteOrder } : {}) },
        ]),
      ),
    },
    limits: {
      maxCalls: config.calls.maxCalls,
      maxPendingSockets: config.calls.maxPendingSockets,
      startTimeoutMs: config.calls.startTimeoutMs,
      maxPayloadBytes: config.calls.maxPayloadBytes,
      maxMessagesPerSecond: config.calls.maxMessagesPerSecond,
    },
    secrets: { twilioAuthToken: secrets.twilioAuthToken, mediaStreamToken: secrets.mediaStreamToken },
    source: options.source,
    cache: options.cache,
    clock: systemClock,
    logger,
    ...(vad
      ? {
          detector: bargeInDetectors(vad, {
            minSpeechMs: bargeIn.minSpeechMs,
            minSpeechWhileAudibleMs: bargeIn.minSpeechWhileAudibleMs,
            echo: bargeIn.echo,
            endOfTurnMs: options.relays.endOfTurnMs,
          }),
        }
      : {}),
    relays: {
      settings: options.relays.settings,
      stt: options.relays.stt,
      twilioAuthToken: secrets.twilioAuthToken,
    },
    recognizer,
    aligner: options.recognition.aligner,
    post: options.post,
    controls: control.controls,
    outbound,
  });
  calls.onCall((call) => logCallEvents(call, logger.child({ gateway: call.gateway })));
  return {
    calls,
    routes: [
      { prefix: '/calls', handler: controlApi(calls, secrets.controlToken) },
      ...control.routes,
      ...(amdCallbacks ? [amdCallbacks.route()] : []),
    ],
    vadWorkers,
    close: async () => {
      await calls.close();
      await control.close();
      await vadWorkers?.close();
    },
  };
}

/**
 * One log line per call event (the control API's event stream), with the call's id as the event has
 * it: the gateway's (Twilio's callSid, …) from the start message on, the id `/calls/{id}` takes; and
 * the stream id once there is one.
 */
function logCallEvents(call: Call, logger: Logger): void {
  const onEvent = (event: CallEvent): void => {
    const { seq: _seq, at: _at, callId, type, ...fields } = event;
    const { streamId } = call;
    logger.info({ callId, ...(streamId === undefined ? {} : { streamId }), ...fields }, type);
    if (type === 'call.ended') call.off('event', onEvent);
  };
  call.on('event', onEvent);
}
