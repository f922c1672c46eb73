/**
 * What a flow needs of the call it runs on (the `FlowCall` port): the runner speaks, plays and waits
 * through it, reads the keys the caller pressed, listens for a spoken answer to a gather, hands the call
 * to a relay app, transfers it to a person, and hangs it up. It knows nothing of gateways or sockets.
 */
import type { MenuGrammar } from '../recognition/grammar.js';
import type { Recognition } from '../recognition/recognizer.js';
import type { RelaySettings } from '../relay/host.js';
import type { AudioInput } from '../speaker/utterance.js';

export interface FlowSayResult {
  status: 'played' | 'interrupted' | 'failed';
}

/** The call's own fields, as a TwiML webhook is told them (Twilio's `From`, `To`, …). */
export interface FlowCallFields {
  from: string;
  to: string;
  /** `inbound` or `outbound-api`, … as the gateway says; default `inbound`. */
  direction: string;
  /** The account the call belongs to where the gateway says (Twilio's); else empty. */
  accountSid: string;
}

/** Which relay a flow hands the call to: one named in the config, or one a TwiML document describes. */
export interface FlowRelaySpec {
  /** The relay's name under `relays:`, or a label for one the flow made (events and logs). */
  name: string;
  /** Settings made by the flow (a TwiML `<ConversationRelay>`); default the named relay's. */
  settings?: RelaySettings | undefined;
  /** `setup.customParameters` (TwiML's `<Parameter>`s); default the call's own parameters. */
  customParameters?: Readonly<Record<string, string>> | undefined;
}

/** How a relay ended: the app said `end`, or its socket closed (or never opened). */
export type FlowRelayOutcome = (
  { reason: 'end'; handoffData: string | undefined } | { reason: 'closed'; detail: string }
) & {
  /** The session's id (`setup.sessionId`), when one was made. */
  sessionId?: string | undefined;
  /** How long it ran (ms). */
  durationMs?: number | undefined;
};

/** One spoken turn of the caller's, recognised against a gather's grammar. */
export interface FlowHeard extends Recognition {
  /** From the end of the caller's turn (the VAD's decision that it ended) to this result, ms. */
  readonly latencyMs: number;
}

/**
 * A gather listening for the caller's next spoken turn: armed before its prompt plays, so that a
 * caller who talks over the prompt is heard from the first syllable.
 */
export interface FlowListening {
  /**
   * The first turn the caller began after `listen`, recognised once it ended (a failed recognition is
   * a result with no key, no digits and confidence 0). Rejects only once the listening is closed or
   * its signal aborted.
   */
  readonly heard: Promise<FlowHeard>;
  /** The caller is in that turn, or it is being recognised: a gather's timeout waits for it. */
  readonly busy: boolean;
  /** Stops listening (a key answered, the gather timed out, the call ended): a recognition under way is dropped. */
  close(): void;
}

/** Where a flow sends the caller (a `transfer` node, a relay app's handoff, a TwiML `<Dial>`). */
export interface FlowTransfer {
  /** An E.164 number or a SIP URI; the call's port refuses anything else. */
  readonly to: string;
  readonly mode: 'cold' | 'warm';
  /** The caller id the target sees (E.164). */
  readonly callerId?: string | undefined;
  /** How long the target may ring (s). */
  readonly timeoutSeconds?: number | undefined;
  /** Warm: what the target hears first (said by the gateway, or an audio file it fetches). */
  readonly summary?: { readonly text: string } | { readonly audioUrl: string } | undefined;
  /** Warm: what the caller hears while waiting, where the gateway can play it. */
  readonly holdMusicUrl?: string | undefined;
}

/**
 * How a transfer went. Done: the gateway has the caller now, and the call leaves voxbridge once the
 * flow has reported it. Failed: the call is still here (nothing reached the gateway, or it refused).
 */
export type FlowTransferOutcome =
  | { readonly ok: true; readonly targetCallId?: string | undefined }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** Who answered, as the call's answering-machine detector decided from the callee's audio. */
export interface FlowMachineDecision {
  readonly result: 'human' | 'machine' | 'unknown';
  /** `short-speech`, `long-speech`, `beep`, `silence` (src/barge-in/amd.ts). */
  readonly reason: string;
  /** When it was decided, in ms of the callee's audio from the stream's start. */
  readonly decidedAtMs: number;
  /** Audible speech heard by then (ms). */
  readonly speechMs: number;
}

/**
 * How a machine's greeting ended: its `beep`, `silence` after it, or neither within the wait
 * (`timeout`); `atMs` in ms of the callee's audio, where the detector said.
 */
export interface FlowGreetingEnd {
  readonly end: 'beep' | 'silence' | 'timeout';
  readonly atMs?: number | undefined;
}

export interface FlowCall {
  readonly id: string;
  /** The call's fields (TwiML webhooks are sent them); default empty, `inbound`. */
  readonly fields?: FlowCallFields | undefined;
  say(text: string, options: { voiceId?: string; interruptible: boolean }): Promise<FlowSayResult>;
  /** Plays audio (a TwiML `<Play>`, still being fetched); undefined where it cannot. */
  play?: ((audio: AudioInput, options: { interruptible: boolean }) => Promise<FlowSayResult>) | undefined;
  /** Waits `ms` on the call's clock (a TwiML `<Pause>`); rejects when `signal` aborts. */
  wait?: ((ms: number, signal: AbortSignal) => Promise<void>) | undefined;
  /**
   * The next key the caller pressed (keys pressed earlier wait in order), or undefined after
   * `timeoutMs` with none. Rejects when `signal` aborts.
   */
  nextDigit(timeoutMs: number, signal: AbortSignal): Promise<string | undefined>;
  /**
   * Listens for the caller's next spoken turn and recognises it against `grammar`, until closed or
   * `signal` aborts; `minConfidence` is what the answer will be held to (the recogniser decodes a
   * second time only when that decides). Undefined where the call cannot hear turns (no VAD, barge-in
   * off).
   */
  listen?: ((grammar: MenuGrammar, signal: AbortSignal, minConfidence: number) => FlowListening) | undefined;
  /** Hangs up (at the gateway, where it can); `handoffData` (from a relay's `end`) goes with the call's end. */
  hangup(handoffData?: string): Promise<void>;
  /**
   * Sends the caller to someone else through the gateway's call control. Undefined where the call
   * cannot be transferred at all; a gateway that cannot do this transfer answers a failed outcome.
   */
  transfer?: ((request: FlowTransfer, signal: AbortSignal) => Promise<FlowTransferOutcome>) | undefined;
  /**
   * Hands the call to a relay app (on a WebSocket) until the app ends it or its socket closes.
   * Undefined where relays cannot run.
   */
  relay?: ((spec: FlowRelaySpec, signal: AbortSignal) => Promise<FlowRelayOutcome>) | undefined;
  /**
   * The answering-machine detector's decision (at once when made already), or undefined when none
   * came within `timeoutMs` (no audio, or too little). Rejects when `signal` aborts. Undefined where
   * the call runs no detector.
   */
  detectMachine?:
    ((timeoutMs: number, signal: AbortSignal) => Promise<FlowMachineDecision | undefined>) | undefined;
  /**
   * Waits for the end of the callee's greeting (started by a machine decision, else from now): its
   * beep, or silence after it; `timeout` after `maxWaitMs` with neither. Rejects when `signal` aborts.
   * Undefined where the call runs no detector.
   */
  greetingEnd?: ((maxWaitMs: number, signal: AbortSignal) => Promise<FlowGreetingEnd>) | undefined;
}
