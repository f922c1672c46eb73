/**
 * What a ConversationRelay session needs of the call or guild it runs on (the `RelayHost` port), how it
 * is set up, how it ends, and the bounds of what an app may make it hold.
 */
import type { Interruptible, RelayExtension, RelayInfoOption } from '../protocols/conversation-relay.js';
import type { InterruptResult, UtteranceHandle } from '../speaker/speaker.js';
import type { AudioInput } from '../speaker/utterance.js';
import type { PlayLimits } from './play.js';

export interface RelaySettings {
  /** The app's WebSocket URL (ws: or wss:), with the call's fields in braces put in (url-template.ts). */
  url: string;
  /** Sent on the WebSocket upgrade (e.g. the app's own Authorization). */
  headers: Readonly<Record<string, string>>;
  /** Spoken when the session starts, before the app says anything. */
  welcome: string | undefined;
  /** Who may cut the welcome; default `interruptible`. */
  welcomeInterruptible: Interruptible | undefined;
  /** Who may cut the app's speech unless a `text` says otherwise. */
  interruptible: Interruptible;
  /** Whether key presses go to the app as `dtmf`. */
  dtmf: boolean;
  /** Voice of the app's speech; default the host's. */
  voiceId: string | undefined;
  /** The voice for each language the app may speak in (a BCP 47 tag: `{ voiceId }`); default none. */
  languages?: Readonly<Record<string, { voiceId: string }>> | undefined;
  /** Where `play` may fetch from, and how much; none: every `play` is refused. */
  play?: PlayLimits | undefined;
  /** Whether a talk cycle that does not say is `preemptible` (the TwiML attribute); default false. */
  preemptible?: boolean | undefined;
  /** The languages the session starts in (as a `language` message would set them); default none. */
  language?: { tts?: string | undefined; transcription?: string | undefined } | undefined;
  /** How long the app's socket may take to open (ms). */
  connectTimeoutMs: number;
  /**
   * The Twilio auth token (`TWILIO_AUTH_TOKEN`), when set: the handshake carries `X-Twilio-Signature`
   * over the app's URL, as Twilio's own does, for an app that checks it. The token itself is never sent.
   */
  twilioAuthToken?: string | undefined;
  /** What the app may send and have held for it; default `RELAY_LIMITS`. */
  limits?: Partial<RelayLimits> | undefined;
  /**
   * The `info` messages the app asked for (ConversationRelay's `debug` attribute, parsed by
   * `parseRelayInfoOptions`): `speaker-events` (`agentSpeaking`, `clientSpeaking`), `tokens-played`
   * (`tokensPlayed`); default none.
   */
  events?: ReadonlySet<RelayInfoOption> | undefined;
  /**
   * Partial transcripts as `prompt`s with `last: false` while the caller speaks (ConversationRelay's
   * `partialPrompts`), each the turn's words so far; then the turn's with `last: true`. Realtime
   * speech-to-text only (batch has no partials). Default false.
   */
  partialPrompts?: boolean | undefined;
  /**
   * Acknowledgements that do not interrupt the app's answer (backchannel.ts; ConversationRelay's
   * `ignorebackchannel`): a barge-in whose turn says only these resumes the answer where it was cut.
   * Empty or none: every barge-in interrupts. Where the host can hold its speech (a call).
   */
  backchannels?: readonly string[] | undefined;
}

/** How a caller's turn reached the app: how long its end took to decide, and its transcript to come. */
export interface TurnTiming {
  /** The caller's last speech to the decision that their turn was over (ms, on the caller's timeline). */
  readonly endpointingMs: number;
  /** The decision to the transcript (ms). */
  readonly sttMs: number;
  /** How it was transcribed: streamed, batch, or batch after the realtime socket failed. */
  readonly via: 'realtime' | 'batch' | 'fallback';
}

/**
 * The whole turn gap: the caller's last speech to the first audio of the app's answer handed to the
 * line, with its parts (`gapMs` = `endpointingMs` + `sttMs` + `appMs` + `firstFrameMs`).
 */
export interface TurnGap extends TurnTiming {
  /** The answer's utterance. */
  readonly utteranceId: string;
  /** The prompt sent to the app's first token (or `play`) of its answer (ms). */
  readonly appMs: number;
  /** The answer's say to its first audio byte from the speech service (ms), when one came. */
  readonly firstByteMs: number | undefined;
  /** The answer's say to its first frame handed to the line (ms). */
  readonly firstFrameMs: number;
  readonly gapMs: number;
}

/** The fields of `setup` that come from the host. */
export interface RelaySetup {
  callSid: string;
  from: string;
  to: string;
  direction: string;
  callType: string;
  customParameters: Record<string, string>;
  /** The account the call belongs to, where the gateway says (Twilio's `AccountSid`); default empty. */
  accountSid?: string;
  voxbridge: RelayExtension;
}

/** What a session needs of the call or guild it runs on. */
export interface RelayHost {
  readonly setup: RelaySetup;
  /**
   * Speaks a stream of text, or plays audio (a `play`, still being fetched); `interruptible`: whether
   * the caller's voice may cut it. The handle's `audible` says when the listener begins to hear it,
   * its `result` when they stopped and what they heard.
   */
  say(
    text: AsyncIterable<string> | AudioInput,
    options: {
      interruptible: boolean;
      voiceId?: string | undefined;
      /** Before anything queued (an answer resumed after a backchannel, while the host holds its queue). */
      first?: boolean | undefined;
    },
  ): UtteranceHandle;
  /** Cuts what plays now, whatever it is (a preempted talk cycle, a key press that may cut it). */
  interrupt(): InterruptResult;
  /** Sends DTMF to the far end (a call plays the tones in-band); undefined where it cannot. */
  readonly sendDigits?: ((digits: string) => Promise<void>) | undefined;
  /** A turn's gap, once the answer to it was heard (the call's events and metrics). */
  readonly turnGap?: ((gap: TurnGap) => void) | undefined;
}

export type RelayOutcome =
  | { reason: 'end'; handoffData: string | undefined }
  | { reason: 'closed'; detail: string }
  | { reason: 'host-ended' };

/**
 * What an app may send and have voxbridge hold for it. An LLM streaming its answer sends tens of
 * tokens a second, one talk cycle at a time; past these the app gets an `error` (or, for its rate and
 * an unread socket, its socket closed), and the call goes on.
 */
export const RELAY_LIMITS = {
  /** Messages a second from the app, on average... */
  messagesPerSecond: 200,
  /** ...and at once (after a pause, or a busy event loop). Past it: closed, 1008. */
  messageBurst: 400,
  /** Characters of one talk cycle (as much as one `say`): the rest of it is dropped, with an `error`. */
  cycleChars: 100_000,
  /** Talk cycles queued or speaking at once: a new one past it is refused, with an `error`. */
  cycles: 8,
  /** Keys of `sendDigits` waiting to be played (one message's worth): more is refused, with an `error`. */
  pendingDigits: 64,
  /** Bytes of ours the app has not read: past it the app is not reading, and its socket is closed (1008). */
  unreadBytes: 1024 * 1024,
  /** A socket closed for misbehaving gets this long to answer the close, then it is cut. */
  closeGraceMs: 1000,
} as const;
export type RelayLimits = { readonly [K in keyof typeof RELAY_LIMITS]: number };
