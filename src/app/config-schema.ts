/**
 * What the configuration may say: the schema `loadConfig` checks default.yaml, the overlay file and the
 * environment against, and from which docs/configuration.md is generated (`npm run docs:config`).
 */
import { unknownFields } from '../relay/url-template.js';
import { z } from 'zod';
import { endpointingSchema } from '../barge-in/endpointing.js';
import { flowsSchema } from '../flows/schema.js';
import { CONFIGURABLE_OUTBOUND, GATEWAYS } from '../protocols/types.js';
import { SCOPES } from '../service/auth.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const keySchema = z.strictObject({
  id: z.string().min(1),
  keyEnv: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must name an environment variable'),
  scopes: z.array(z.enum(SCOPES)).min(1),
});

/** An outbound codec where the gateway leaves it to the deployment (Telnyx, Plivo, jambonz, …). */
const wireFormatSchema = z.strictObject({
  encoding: z.enum(['mulaw', 'alaw', 's16le']),
  sampleRate: z.union([z.literal(8000), z.literal(16_000), z.literal(24_000)]),
  /** Telnyx L16 only: RTP payloads are big-endian (RFC 3551) unless the account says otherwise. */
  l16ByteOrder: z.enum(['big', 'little']).optional(),
});

const castMemberSchema = z.strictObject({
  voiceId: z.string().min(1),
  voiceSettings: z
    .strictObject({
      stability: z.number().min(0).max(1).optional(),
      similarityBoost: z.number().min(0).max(1).optional(),
      style: z.number().min(0).max(1).optional(),
      useSpeakerBoost: z.boolean().optional(),
      speed: z.number().min(0.7).max(1.2).optional(),
    })
    .optional(),
});

/** A neural voice's model directory with its settings (onnx/model-dir.ts's OnnxModelConfig). */
const onnxModelSchema = z.strictObject({
  path: z.string().min(1),
  name: z.string().min(1).max(100).optional(),
  model: z.string().min(1).optional(),
  speakers: z.array(z.number().int().min(0)).min(1).max(10_000).optional(),
  noiseScale: z.number().min(0).max(2).optional(),
  noiseScaleW: z.number().min(0).max(2).optional(),
  lengthScale: z.number().min(0.1).max(10).optional(),
});
/** An http(s) URL with no credentials, query or fragment: a base other URLs are built on. */
const baseUrl = z.url({ protocol: /^https?$/ }).refine((u) => {
  const url = new URL(u);
  return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
}, 'a base URL: no credentials, query or fragment');

/** A gateway's REST API; null: the vendor's own. */
const apiBaseUrl = baseUrl.nullable();

/**
 * The gateways' call control (src/call-control): hanging up at the gateway, transfers, and outbound
 * calls, through each gateway's REST API with credentials from the environment only.
 */
const callControlSchema = z
  .strictObject({
    /** A hang-up ends the call at the gateway (its REST API) before the stream is closed, where it can. */
    hangUpAtGateway: z.boolean(),
    /** Outbound calls being placed at once (requested, not yet streaming); more get 429. */
    maxPlacing: z.number().int().min(1).max(10_000),
    /** From the request to the call's media stream: past it the call fails (no_media) and is hung up. */
    answerTimeoutMs: z.number().int().min(1000).max(600_000),
    /** How long an outbound call may ring when the request does not say (s). */
    ringSeconds: z.number().int().min(5).max(600),
    /** Each REST request's deadline, connecting to the answer's last byte. */
    requestTimeoutMs: z.number().int().min(500).max(60_000),
    /** The largest REST answer read. */
    maxAnswerBytes: z
      .number()
      .int()
      .min(4096)
      .max(16 * 1024 * 1024),
    /** Instructions published for gateways that fetch them (Plivo, jambonz, Vonage's summaries). */
    documents: z.strictObject({
      /** How long a published document is served. */
      ttlMs: z.number().int().min(10_000).max(3_600_000),
      /** Documents served at once, at most; past it a transfer or a call that needs one fails. */
      maxDocuments: z.number().int().min(1).max(100_000),
    }),
    twilio: z.strictObject({ apiBaseUrl }),
    telnyx: z.strictObject({ apiBaseUrl }),
    plivo: z.strictObject({ apiBaseUrl }),
    vonage: z.strictObject({
      apiBaseUrl,
      /** The websocket endpoint's content-type of an outbound call. */
      streamContentType: z.enum(['audio/l16;rate=8000', 'audio/l16;rate=16000']),
    }),
    jambonz: z.strictObject({
      apiBaseUrl,
      /** createCall's speech settings (required by jambonz, unused by `listen`); null: Google, en-US. */
      synthesisVendor: z.string().min(1).max(64).nullable(),
      synthesisLanguage: z.string().min(1).max(64).nullable(),
      synthesisVoice: z.string().min(1).max(128).nullable(),
      recognizerVendor: z.string().min(1).max(64).nullable(),
      recognizerLanguage: z.string().min(1).max(64).nullable(),
    }),
    asterisk: z.strictObject({
      /** ARI's base, e.g. http://127.0.0.1:8088/ari; null: that. */
      apiBaseUrl,
      /** Dial string of a number (`{number}` replaced), e.g. PJSIP/{number}@trunk; needed to originate. */
      dialNumber: z.string().min(1).max(256).nullable(),
      /** Dial string of a SIP URI (`{uri}` replaced). */
      dialSip: z.string().min(1).max(256).nullable(),
      redirectTemplate: z.string().min(1).max(256),
      transferContext: z.string().min(1).max(80).nullable(),
      originateContext: z.string().min(1).max(80).nullable(),
      originateExtension: z.string().min(1).max(80),
    }),
    exotel: z.strictObject({
      apiBaseUrl,
      /** The flow (App Bazaar id) whose Voicebot applet streams to voxbridge; needed to originate. */
      flowAppId: z.string().min(1).max(64).nullable(),
    }),
  })
  .superRefine((c, ctx) => {
    if (c.ringSeconds * 1000 >= c.answerTimeoutMs)
      ctx.addIssue({
        code: 'custom',
        path: ['answerTimeoutMs'],
        message: 'must exceed ringSeconds (a callee may answer at the last ring)',
      });
  });

const snowflake = z.string().regex(/^\d{1,25}$/, 'must be a Discord id (snowflake)');

const discordSchema = z.strictObject({
  /** Default voice of /say and of every guild. */
  voiceId: z.string().min(1),
  /** Register the slash commands in these guilds only (instant); empty: globally. */
  commandGuildIds: z.array(snowflake),
  /**
   * DISCORD_SHARDS: null runs the bot in this process (one shard). A count, or `auto` (what Discord
   * recommends), runs each shard as a process of its own (discord.js's ShardingManager); needs a cluster.
   */
  shards: z.union([z.literal('auto'), z.number().int().min(1).max(10_000)]).nullable(),
  /** DISCORD_SHARD_IDS: the shards this machine runs (the others run elsewhere); null: all of them. */
  shardIds: z.array(z.number().int().min(0)).min(1).nullable(),
  /** Between two shard processes' starts: Discord lets a bot identify once per 5 s (per max_concurrency bucket). */
  shardSpawnDelayMs: z.number().int().min(0).max(60_000),
  /** DISCORD_API_URL: Discord's REST API root (`https://discord.com/api`) or a proxy in front of it; null: Discord's. */
  apiUrl: z.url({ protocol: /^https?$/ }).nullable(),
  bargeIn: z.strictObject({
    enabled: z.boolean(),
    minSpeechMs: z.number().int().min(20).max(5000),
    maxGapMs: z.number().int().min(0).max(1000),
    minLevelDbfs: z.number().min(-96).max(0),
  }),
  /** Per-guild overrides by guild id, e.g. barge-in off for a noisy table. */
  guilds: z.record(snowflake, z.strictObject({ bargeIn: z.boolean().optional() })),
  joinTimeoutMs: z.number().int().min(1000).max(120_000),
  reconnect: z.strictObject({
    maxAttempts: z.number().int().min(0).max(100),
    baseDelayMs: z.number().int().min(0),
    maxDelayMs: z.number().int().min(0),
    settleMs: z.number().int().min(0),
    readyTimeoutMs: z.number().int().min(1000),
  }),
  narration: z
    .strictObject({
      /** Who speaks untagged text. */
      narrator: z.string().min(1),
      /** Character → voice. */
      cast: z.record(z.string().min(1).max(40), castMemberSchema),
    })
    .refine((n) => Object.keys(n.cast).some((name) => name.toLowerCase() === n.narrator.toLowerCase()), {
      message: 'the narrator must be in the cast',
    }),
});

export const configSchema = z.strictObject({
  server: z.strictObject({
    host: z.string().min(1),
    port: z.coerce.number().int().min(0).max(65_535),
    /** On SIGTERM/SIGINT, how long speech under way may go on before it is cut (ms). */
    shutdownGraceMs: z.number().int().min(0).max(120_000),
    /** Host names answered besides loopback names and IP literals (src/http/web-guard.ts). */
    allowedHosts: z.array(
      z
        .string()
        .regex(/^(\*|\.?[a-z0-9]([a-z0-9.-]*[a-z0-9])?)$/i, 'must be a host name, .domain, or *')
        .max(253),
    ),
    /** Open connections at once (HTTP and WebSocket); past it new ones get 503 and are closed. */
    maxConnections: z.number().int().min(16).max(1_000_000),
    /** A connection must send its request headers within this long (slow-loris), ms. */
    headersTimeoutMs: z.number().int().min(1000).max(300_000),
    /** A request (headers and body) must arrive within this long, ms; upgrades and responses are not bound. */
    requestTimeoutMs: z.number().int().min(1000).max(3_600_000),
    /** An idle keep-alive connection is closed after this long, ms. */
    keepAliveTimeoutMs: z.number().int().min(100).max(600_000),
    /**
     * PUBLIC_URL: where the gateways reach this instance (https://voice.example.com); outbound calls'
     * media streams come back to it (wss://…/media/<gateway>), and it serves their documents. null:
     * no outbound calls.
     */
    publicUrl: baseUrl.nullable(),
  }),
  dataDir: z.string().min(1),
  logLevel: z.enum(LOG_LEVELS),
  speech: z.strictObject({
    /**
     * A remote speech service; null mounts the embedded one. `user:password@` in it is sent as
     * `Authorization: Basic` (besides the key header) and shown as `[redacted]` in logs.
     */
    baseUrl: z.url({ protocol: /^https?$/ }).nullable(),
    pathPrefix: z.string().regex(/^(\/[^/]+)*$/, 'must be empty or start with / and not end with /'),
    authHeader: z.enum(['ServicePlatform-APIKey', 'xi-api-key']),
    modelId: z.string().min(1),
    firstByteTimeoutMs: z.number().int().positive(),
    idleTimeoutMs: z.number().int().positive(),
    maxRetries: z.number().int().min(0).max(10),
    retryBaseDelayMs: z.number().int().min(0),
    retryMaxDelayMs: z.number().int().min(0),
    /**
     * Ask for character timings (`/stream/with-timestamps`), so that what a listener heard before a
     * barge-in is exact; a service without them is asked plainly (the heard text is then estimated).
     */
    timestamps: z.boolean(),
  }),
  /** Speech-to-text for the caller's turns (a relay's `prompt`s); baseUrl null: no prompts. */
  stt: z.strictObject({
    /** STT_BASE_URL: an ElevenLabs-compatible service (`POST {baseUrl}{pathPrefix}/v1/speech-to-text`). */
    baseUrl: z.url({ protocol: /^https?$/ }).nullable(),
    pathPrefix: z.string().regex(/^(\/[^/]+)*$/, 'must be empty or start with / and not end with /'),
    authHeader: z.enum(['ServicePlatform-APIKey', 'xi-api-key']),
    modelId: z.string().min(1),
    /** Silence after the caller's speech that ends their turn (ms): batch mode, and what barge-in waits for. */
    endOfTurnMs: z.number().int().min(200).max(5000),
    /**
     * STT_MODE. `batch`: a turn ends after `endOfTurnMs` of silence and goes as a WAV to
     * `/v1/speech-to-text`. `realtime`: the caller's audio streams to `/v1/speech-to-text/realtime` as
     * they speak, the turn ends by `endpointing` (its words and its silence), and a turn whose socket
     * fails goes to batch.
     */
    mode: z.enum(['batch', 'realtime']),
    realtime: z.strictObject({
      /** STT_REALTIME_BASE_URL: the realtime service (http(s), made ws(s)); null: `baseUrl`. */
      baseUrl: z.url({ protocol: /^https?$/ }).nullable(),
      modelId: z.string().min(1).max(200),
      /** Audio sent from before the speech began (ms): the first syllable's attack. */
      preRollMs: z.number().int().min(0).max(1000),
      /** The socket open and the session started within this long, else the turn goes to batch. */
      connectTimeoutMs: z.number().int().min(100).max(30_000),
      /** The turn's end to its committed transcript, else the turn goes to batch. */
      commitTimeoutMs: z.number().int().min(100).max(30_000),
      /** The longest turn: a caller who talks longer is cut there (its transcript sent, the rest a new turn). */
      maxTurnMs: z.number().int().min(1000).max(60_000),
    }),
    /** When a turn is over in realtime mode: by its words so far and the silence after them. */
    endpointing: endpointingSchema,
  }),
  /** Apps that drive a call or a guild over ConversationRelay's WebSocket protocol, by name. */
  relays: z.record(
    z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, 'relay names are letters, digits, _ and -'),
    z.strictObject({
      /** May hold the call's fields in braces (`{callSid}`, `{param.NAME}`, …: src/relay/url-template.ts). */
      url: z.url({ protocol: /^wss?$/ }).refine((url) => unknownFields(url).length === 0, {
        message: 'a relay url may hold {callSid}, {from}, {to}, {direction}, {sessionId} and {param.NAME}',
      }),
      /** Sent on the upgrade; a value `env:NAME` is read from that environment variable (a secret). */
      headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(4096)).default({}),
      welcome: z.string().min(1).max(5000).optional(),
      welcomeInterruptible: z.enum(['none', 'dtmf', 'speech', 'any']).optional(),
      interruptible: z.enum(['none', 'dtmf', 'speech', 'any']).default('any'),
      dtmf: z.boolean().default(true),
      voiceId: z.string().min(1).optional(),
      /**
       * The voice for each language the app may speak in (`<Language code voice>` in TwiML): a
       * `language` message's `ttsLanguage` or a `text`'s `lang` picks it (exact tag, else the same
       * language with another region); others speak in `voiceId`.
       */
      languages: z
        .record(
          z.string().regex(/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$/, 'a language tag such as es-ES'),
          z.strictObject({ voiceId: z.string().min(1).max(200) }),
        )
        .refine((l) => Object.keys(l).length <= 64, 'at most 64 languages')
        .default({}),
      /**
       * Where a `play` may fetch its WAV or MP3 from (`host[:port]` as in the URL; none: `play` is
       * refused), the file's size at most, and the fetch's deadline.
       */
      play: z
        .strictObject({
          hosts: z.array(z.string().min(1).max(253)).max(32).default([]),
          maxBytes: z
            .number()
            .int()
            .min(1024)
            .max(50 * 1024 * 1024)
            .default(10 * 1024 * 1024),
          timeoutMs: z.number().int().min(100).max(60_000).default(10_000),
        })
        .default({ hosts: [], maxBytes: 10 * 1024 * 1024, timeoutMs: 10_000 }),
      connectTimeoutMs: z.number().int().min(100).max(60_000).default(5000),
      /**
       * The `info` messages the app is sent, as ConversationRelay's `debug` attribute names them
       * (`speaker-events`, `tokens-played`, `debugging`): a list, or words separated by spaces or
       * commas; an unknown one is logged at start and ignored.
       */
      debug: z.union([z.string().max(200), z.array(z.string().min(1).max(40)).max(8)]).default([]),
      /**
       * Partial transcripts as `prompt`s with `last: false` while the caller speaks (realtime
       * speech-to-text only), then the turn's with `last: true`, as ConversationRelay's
       * `partialPrompts`.
       */
      partialPrompts: z.boolean().default(false),
      /**
       * Acknowledgements ("yeah", "uh-huh") that do not interrupt the app's answer: a barge-in whose turn
       * says only these (or nothing: a cough) resumes the answer where it was cut, and the app hears of
       * neither. `true`: the default list (src/relay/backchannel.ts); a list: those; `false` (the
       * default, as Twilio's `ignorebackchannel`): every barge-in interrupts. Phone calls only.
       */
      backchannels: z.union([z.boolean(), z.array(z.string().min(1).max(40)).min(1).max(64)]).default(false),
    }),
  ),
  service: z.strictObject({
    workers: z.number().int().min(0).max(64),
    engines: z.strictObject({
      onnx: z.strictObject({
        /** Directories of VITS models (a path, or the path with its settings): docs/speech-service.md. */
        models: z.array(z.union([z.string().min(1), onnxModelSchema])).max(64),
      }),
    }),
    /** Speech requests each key of `keys` may have in flight. */
    maxConcurrentPerKey: z.number().int().positive(),
    /**
     * Speech requests voxbridge's own speaking (calls, Discord; an internal key) may have in flight; null:
     * the larger of maxConcurrentPerKey and 2 × calls.maxCalls (a segment playing and the next prefetching
     * per call).
     */
    internalMaxConcurrent: z.number().int().positive().nullable(),
    keys: z.array(keySchema),
    voices: z.strictObject({
      maxFiles: z.number().int().positive(),
      maxFileBytes: z.number().int().positive(),
      maxTotalBytes: z.number().int().positive(),
      /** Voice uploads being received or analysed at once, all keys together; more get 429. */
      maxConcurrentUploads: z.number().int().positive(),
      /** Bytes of samples the voice store may hold (uploads in progress count); past it, 507. */
      maxStoreBytes: z.number().int().positive(),
    }),
  }),
  calls: z.strictObject({
    /** Voice of every call unless a flow node or a say request names another. */
    voiceId: z.string().min(1),
    gateways: z.array(z.enum(GATEWAYS)).min(1),
    maxCalls: z.number().int().positive(),
    /** Media connections that have not sent their start message yet, counted apart from maxCalls. */
    maxPendingSockets: z.number().int().positive(),
    /** A media connection without a start message this long after it opened is closed. */
    startTimeoutMs: z.number().int().min(100).max(60_000),
    maxPayloadBytes: z.number().int().min(1024),
    maxMessagesPerSecond: z.number().int().positive(),
    leadMs: z.number().int().min(20).max(2000),
    markIntervalMs: z.number().int().min(20).max(5000),
    /** Audio of repeated prompts kept in memory (bytes of 24 kHz PCM), shared by all calls. */
    phraseCacheBytes: z.number().int().min(0),
    /** Outbound codec per gateway where the gateway does not say it in its start message. */
    formats: z.partialRecord(z.enum(GATEWAYS), wireFormatSchema).superRefine((formats, ctx) => {
      for (const gateway of Object.keys(formats))
        if (!(CONFIGURABLE_OUTBOUND as readonly string[]).includes(gateway))
          ctx.addIssue({
            code: 'custom',
            path: [gateway],
            message: `${gateway} plays what its start message or protocol fixes; only ${CONFIGURABLE_OUTBOUND.join(', ')} take an outbound format`,
          });
    }),
    bargeIn: z.strictObject({
      enabled: z.boolean(),
      minSpeechMs: z.number().int().min(20).max(5000),
      /**
       * While the bot is audible and its echo cannot be told from the caller (echo off, or the echo
       * path not found yet: the first second or two of the bot's speech), longer speech is required.
       */
      minSpeechWhileAudibleMs: z.number().int().min(20).max(5000),
      /**
       * Echo-aware detection: the bot's played audio is the reference; each call's echo path (delay,
       * loss) is tracked, and only what the echo does not explain can barge in, after `minSpeechMs`
       * whether the bot is audible or not.
       */
      echo: z.boolean(),
      /**
       * Worker threads that run the voice-activity model, off the event loop: 'auto' one per core, 0
       * on the event loop itself (one process, few calls).
       */
      workers: z.union([z.literal('auto'), z.number().int().min(0).max(64)]),
      /**
       * A false barge-in taken back: when the caller's turn that cut the bot ends within `windowMs`
       * with at most `maxSpeechMs` of speech (a cough, "uh-huh"), the cut utterance resumes from the
       * first word not heard whole. The window must leave room for `stt.endOfTurnMs`.
       */
      resume: z.strictObject({
        enabled: z.boolean(),
        windowMs: z.number().int().min(300).max(10_000),
        maxSpeechMs: z.number().int().min(50).max(5000),
      }),
    }),
    /**
     * Spoken answers to a flow's gather (`input: [dtmf, speech]`), recognised offline against the
     * gather's grammar: one recogniser for every call, started when some gather listens.
     */
    recognition: z.strictObject({
      /** Its worker threads, each with the acoustic model loaded. */
      workers: z.number().int().min(1).max(16),
    }),
    /** The flow a call runs when its parameters name none; null: none (driven by the control API). */
    defaultFlow: z.string().nullable(),
    control: callControlSchema,
  }),
  flows: flowsSchema,
  discord: discordSchema,
  cluster: z
    .strictObject({
      /** REDIS_URL: null runs one instance, as without a cluster. */
      redisUrl: z.url({ protocol: /^rediss?$/ }).nullable(),
      /** INSTANCE_ID; null: `<hostname>-<pid>`. */
      instanceId: z
        .string()
        .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, ".", "_" and "-", at most 64')
        .nullable(),
      /** INSTANCE_URL, the URL other instances reach this one at; null: the address it listens on. */
      instanceUrl: z.url({ protocol: /^https?$/ }).nullable(),
      keyPrefix: z.string().regex(/^[A-Za-z0-9:._-]{0,64}$/, 'letters, digits, ":", ".", "_" and "-"'),
      heartbeatMs: z.number().int().min(100).max(60_000),
      ttlMs: z.number().int().min(300).max(300_000),
      /** Connecting to another instance: past this it counts as unreachable (503). */
      connectTimeoutMs: z.number().int().min(50).max(30_000),
      /** A forwarded request's answer (headers, but a say's; a whole JSON answer): past it 504. */
      answerTimeoutMs: z.number().int().min(1000).max(600_000),
      /** The largest answer read from another instance (not an event stream): past it 502. */
      maxAnswerBytes: z
        .number()
        .int()
        .min(64 * 1024)
        .max(256 * 1024 * 1024),
      /** Instances considered at most: what a list asks, what the registry reads. */
      maxInstances: z.number().int().min(1).max(10_000),
      phraseCache: z.strictObject({
        enabled: z.boolean(),
        maxEntryBytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024),
        ttlSeconds: z
          .number()
          .int()
          .min(1)
          .max(30 * 86_400),
        /** A lookup slower than this counts as a miss (the speech service is asked). */
        timeoutMs: z.number().int().min(1).max(5000),
      }),
    })
    .superRefine((c, ctx) => {
      if (c.ttlMs < 2 * c.heartbeatMs)
        ctx.addIssue({ code: 'custom', path: ['ttlMs'], message: 'must be at least twice heartbeatMs' });
    }),
});

export type Config = z.infer<typeof configSchema>;
