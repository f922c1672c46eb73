/**
 * `GET /metrics` in Prometheus format (prom-client): what is live (calls, guilds, the local engine's
 * queue), what utterances did (by outcome, time to first byte and first frame, underruns, the speech
 * service's error codes), and barge-ins with how long the listener spoke before the bot went quiet.
 * Behind CONTROL_TOKEN when one is set.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Call } from '../../adapters/media-stream/call.js';
import type { CallEvent } from '../../adapters/media-stream/call-events.js';
import type { GuildVoice } from '../../adapters/discord/guild-voice.js';
import type { UtteranceResult } from '../speaker/speaker.js';
import type { TurnGap } from '../relay/host.js';
import { bearerAuthorized, sendUnauthorized, type RouteHandler } from '../http/http.js';

export type Adapter = 'phone' | 'discord';

export interface MetricsSources {
  activeCalls(): number;
  activeGuilds(): number;
  /** Jobs waiting for a local engine worker (undefined: no embedded service). */
  engineQueueDepth(): number | undefined;
  /** The voice-activity model's worker threads; undefined when they do not run. */
  vad?:
    (() => { queueDepth: number; restarts: number; skippedWindows: number; inferences: number }) | undefined;
  /** This instance's view of its cluster; undefined (no cluster metrics) without REDIS_URL. */
  cluster?: (() => ClusterMetrics) | undefined;
}

export interface ClusterMetrics {
  registry: 'ok' | 'unreachable';
  instances: number;
  forwarded: number;
  unreachable: number;
  /** Answers not relayed: too large, too slow, cut. */
  refused: number;
  phrases: { hits: number; misses: number; errors: number } | undefined;
}

/** Seconds: from a cached phrase (a few ms) to a slow remote service (seconds). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];
const BARGE_IN_BUCKETS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2];
/** Seconds: a turn gap's parts run from a few ms (a first frame) to seconds (an app thinking). */
const TURN_GAP_BUCKETS = [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 1, 1.5, 2, 3, 5, 10];
/** The parts of a turn gap, as `voxbridge_turn_gap_seconds` labels them. */
const TURN_GAP_PARTS = ['total', 'endpointing', 'stt', 'app', 'first_byte', 'first_frame'] as const;

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[a-z0-9_.-]{1,64}$/i.test(code) ? code : 'error';
}

export class VoxbridgeMetrics {
  readonly registry = new Registry();
  private readonly utterances: Counter<'adapter' | 'outcome'>;
  private readonly firstByte: Histogram<'adapter'>;
  private readonly firstFrame: Histogram<'adapter'>;
  private readonly underruns: Counter<'adapter'>;
  private readonly speechErrors: Counter<'adapter' | 'code'>;
  private readonly bargeIns: Counter<'adapter'>;
  private readonly bargeInStop: Histogram<'adapter'>;
  private readonly turnGap: Histogram<'adapter' | 'part'>;
  private readonly relayTurns: Counter<'adapter' | 'stt'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'voxbridge_' });
    new Gauge({
      name: 'voxbridge_calls_active',
      help: 'Phone calls connected now',
      registers,
      collect() {
        this.set(sources.activeCalls());
      },
    });
    new Gauge({
      name: 'voxbridge_discord_guilds_active',
      help: 'Discord guilds with a voice connection now',
      registers,
      collect() {
        this.set(sources.activeGuilds());
      },
    });
    new Gauge({
      name: 'voxbridge_engine_queue_depth',
      help: "Synthesis jobs waiting for the local engine's workers",
      registers,
      collect() {
        this.set(sources.engineQueueDepth() ?? 0);
      },
    });
    const vad = sources.vad;
    if (vad) {
      new Gauge({
        name: 'voxbridge_vad_queue_depth',
        help: 'Chunks of caller audio sent to the voice-activity worker threads and not answered yet',
        registers,
        collect() {
          this.set(vad().queueDepth);
        },
      });
      new Counter({
        name: 'voxbridge_vad_windows_skipped_total',
        help: 'Windows of caller audio that would have woken the voice-activity model but were judged by the energy gate alone, their detector being behind (the machine too busy)',
        registers,
        collect() {
          this.reset();
          this.inc(vad().skippedWindows);
        },
      });
      new Counter({
        name: 'voxbridge_vad_inferences_total',
        help: 'Voice-activity model inferences run in the worker threads',
        registers,
        collect() {
          this.reset();
          this.inc(vad().inferences);
        },
      });
      new Counter({
        name: 'voxbridge_vad_worker_restarts_total',
        help: 'Voice-activity worker threads that died and were replaced (their windows judged by the energy gate)',
        registers,
        collect() {
          this.reset();
          this.inc(vad().restarts);
        },
      });
    }
    const cluster = sources.cluster;
    if (cluster) {
      new Gauge({
        name: 'voxbridge_cluster_registry_up',
        help: 'Whether the cluster registry (Redis) is reachable: 0 means degraded (local calls go on)',
        registers,
        collect() {
          this.set(cluster().registry === 'ok' ? 1 : 0);
        },
      });
      new Gauge({
        name: 'voxbridge_cluster_instances',
        help: 'Live instances of the cluster as this one last saw them',
        registers,
        collect() {
          this.set(cluster().instances);
        },
      });
      new Counter({
        name: 'voxbridge_cluster_forwarded_total',
        help: 'Control requests passed on to the instance holding their call or guild, by outcome',
        labelNames: ['outcome'],
        registers,
        collect() {
          const c = cluster();
          this.reset();
          this.inc({ outcome: 'answered' }, c.forwarded);
          this.inc({ outcome: 'unreachable' }, c.unreachable);
          this.inc({ outcome: 'refused' }, c.refused);
        },
      });
      new Counter({
        name: 'voxbridge_shared_phrase_lookups_total',
        help: "Phrase lookups in the cluster's shared cache (Redis), by result",
        labelNames: ['result'],
        registers,
        collect() {
          const p = cluster().phrases;
          this.reset();
          this.inc({ result: 'hit' }, p?.hits ?? 0);
          this.inc({ result: 'miss' }, p?.misses ?? 0);
          this.inc({ result: 'error' }, p?.errors ?? 0);
        },
      });
    }
    this.utterances = new Counter({
      name: 'voxbridge_utterances_total',
      help: 'Utterances ended, by adapter and outcome (played, interrupted, failed)',
      labelNames: ['adapter', 'outcome'],
      registers,
    });
    this.firstByte = new Histogram({
      name: 'voxbridge_first_byte_seconds',
      help: "say() to the speech service's first audio byte (or the phrase cache's)",
      labelNames: ['adapter'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.firstFrame = new Histogram({
      name: 'voxbridge_first_frame_seconds',
      help: 'say() to the first frame handed to the transport',
      labelNames: ['adapter'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.underruns = new Counter({
      name: 'voxbridge_underruns_total',
      help: 'Frames the transport needed that were not ready',
      labelNames: ['adapter'],
      registers,
    });
    this.speechErrors = new Counter({
      name: 'voxbridge_speech_errors_total',
      help: 'Utterances failed, by the speech service error code',
      labelNames: ['adapter', 'code'],
      registers,
    });
    this.bargeIns = new Counter({
      name: 'voxbridge_barge_ins_total',
      help: 'Times a listener talking stopped the bot',
      labelNames: ['adapter'],
      registers,
    });
    this.bargeInStop = new Histogram({
      name: 'voxbridge_barge_in_stop_seconds',
      help: "From the listener's speech onset to the bot's audio stopped",
      labelNames: ['adapter'],
      buckets: BARGE_IN_BUCKETS,
      registers,
    });
    this.turnGap = new Histogram({
      name: 'voxbridge_turn_gap_seconds',
      help: "A relay caller's last speech to the first audio of the app's answer handed to the line (part total), and its parts: endpointing (the end of the turn decided), stt (its transcript), app (the prompt to the answer's first token), first_byte (the speech service's), first_frame (first byte to first frame)",
      labelNames: ['adapter', 'part'],
      buckets: TURN_GAP_BUCKETS,
      registers,
    });
    this.relayTurns = new Counter({
      name: 'voxbridge_relay_turns_total',
      help: "Relay callers' turns answered, by how they were transcribed: realtime, batch, or fallback (batch after the realtime socket failed)",
      labelNames: ['adapter', 'stt'],
      registers,
    });
    // Every series present from the start, at 0: a rate() needs the zero before the first event.
    for (const adapter of ['phone', 'discord'] as const) {
      for (const stt of ['realtime', 'batch', 'fallback']) this.relayTurns.labels(adapter, stt).inc(0);
      for (const outcome of ['played', 'interrupted', 'failed'])
        this.utterances.labels(adapter, outcome).inc(0);
      this.bargeIns.labels(adapter).inc(0);
      this.underruns.labels(adapter).inc(0);
    }
  }

  utteranceEnded(adapter: Adapter, result: Pick<UtteranceResult, 'status' | 'error' | 'metrics'>): void {
    this.utterances.labels(adapter, result.status).inc();
    const { firstByteMs, firstFrameMs, underruns } = result.metrics;
    if (firstByteMs !== undefined) this.firstByte.labels(adapter).observe(firstByteMs / 1000);
    if (firstFrameMs !== undefined) this.firstFrame.labels(adapter).observe(firstFrameMs / 1000);
    if (underruns > 0) this.underruns.labels(adapter).inc(underruns);
    if (result.status === 'failed') this.speechErrors.labels(adapter, errorCode(result.error)).inc();
  }

  bargedIn(adapter: Adapter, onsetToStopMs: number): void {
    this.bargeIns.labels(adapter).inc();
    this.bargeInStop.labels(adapter).observe(Math.max(0, onsetToStopMs) / 1000);
  }

  /** A relay's turn answered: its gap and the gap's parts. */
  turnAnswered(adapter: Adapter, gap: TurnGap): void {
    this.relayTurns.labels(adapter, gap.via).inc();
    const parts: Record<(typeof TURN_GAP_PARTS)[number], number | undefined> = {
      total: gap.gapMs,
      endpointing: gap.endpointingMs,
      stt: gap.sttMs,
      app: gap.appMs,
      first_byte: gap.firstByteMs,
      first_frame: gap.firstByteMs === undefined ? undefined : gap.firstFrameMs - gap.firstByteMs,
    };
    for (const part of TURN_GAP_PARTS) {
      const ms = parts[part];
      if (ms !== undefined) this.turnGap.labels(adapter, part).observe(Math.max(0, ms) / 1000);
    }
  }

  /** Follows a phone call's events. */
  watchCall(call: Call): void {
    const onEvent = (event: CallEvent): void => {
      if (event.type === 'utterance.finished') {
        const r = event.result;
        this.utteranceEnded('phone', {
          status: r.status,
          error: r.error,
          metrics: {
            firstByteMs: r.firstByteMs,
            firstFrameMs: r.firstFrameMs,
            underruns: r.underruns,
            cachedSegments: 0,
            requestedSegments: 0,
          },
        });
      } else if (event.type === 'barge-in') {
        // The clear goes out when the onset is confirmed.
        this.bargedIn('phone', event.detectedMs - event.onsetMs);
      } else if (event.type === 'relay.turn') {
        this.turnAnswered('phone', event);
      } else if (event.type === 'call.ended') call.off('event', onEvent);
    };
    call.on('event', onEvent);
  }

  /** Follows a guild's speaker and barge-ins. */
  watchGuild(voice: GuildVoice): void {
    voice.speaker.on('utteranceEnd', ({ result }) => this.utteranceEnded('discord', result));
    voice.on('bargeIn', (e) => {
      if (e.interrupted) this.bargedIn('discord', e.decidedAtMs - e.speakingSinceMs);
    });
    voice.on('relayTurn', (gap) => this.turnAnswered('discord', gap));
  }

  handler(controlToken: string | undefined): RouteHandler {
    return async (req, res, path) => {
      if (path !== '/') return false;
      if (!bearerAuthorized(req, controlToken)) {
        sendUnauthorized(res);
        return true;
      }
      const body = await this.registry.metrics();
      res.writeHead(200, { 'content-type': this.registry.contentType });
      res.end(body);
      return true;
    };
  }
}
