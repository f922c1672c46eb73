// Over 450 lines: one session, whose messages both ways, talk cycles, held barge-ins and limits share its socket and state; its parts (host port and limits, talk cycles, play, languages, URL) live beside it.
/**
 * One ConversationRelay session: voxbridge opens a WebSocket to the app's URL, says `setup`, and then
 * relays both ways. The app's `text` tokens are spoken as they arrive (one utterance per talk cycle,
 * ended by `last: true`); the caller's turns go to the app as `prompt`s, key presses as `dtmf`, and a
 * barge-in as `interrupt` with exactly what the listener heard. An app that asked for them (`debug`)
 * is told who is speaking and what was heard of each answer as `info` messages. The session knows
 * nothing of gateways or Discord: a `RelayHost` (a call, a guild) speaks and reports for it.
 *
 * It ends when the app says `end` (with its `handoffData`), when the app's socket closes or fails, or
 * when the host ends it (the call hung up); `done` says which, and nothing of it is left behind.
 */
import { twilioSignature } from '../protocols/twilio-signature.js';
import { promptLang } from './lang.js';
import { fetchPlay, LOOP_FOREVER, playUrl } from './play.js';
import { relayUrl } from './url-template.js';
import { gapOf, heardOf, newCycle, restOf, type TalkCycle, type TextCycle } from './talk-cycle.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { AsyncQueue } from '../async/queue.js';
import { RateLimit } from '../async/rate-limit.js';
import { CLOSE } from '../http/ws-close.js';
import { rawText } from '../http/ws-data.js';
import {
  parseFromApp,
  RELAY_MAX_MESSAGE_BYTES,
  RelayParseError,
  serializeToApp,
  type FromApp,
  type Interruptible,
  type RelayExtension,
  type RelayInfoOption,
  type ToApp,
} from '../protocols/conversation-relay.js';
import type { UtteranceHandle, UtteranceMetrics } from '../speaker/speaker.js';
import {
  RELAY_LIMITS,
  type RelayHost,
  type RelayLimits,
  type RelayOutcome,
  type RelaySettings,
  type TurnTiming,
} from './host.js';
export {
  RELAY_LIMITS,
  type RelayHost,
  type RelayLimits,
  type RelayOutcome,
  type RelaySettings,
  type RelaySetup,
  type TurnGap,
  type TurnTiming,
} from './host.js';

export interface RelayStats {
  tokens: number;
  prompts: number;
  interrupts: number;
  errors: number;
}

/** Languages without a voice the app is told of, at most (the rest are spoken in the default voice silently). */
const MAX_UNVOICED = 16;
/** `play` files fetched at once, at most (each up to `play.maxBytes`, then decoded): more are refused. */
const MAX_PLAY_FETCHES = 2;
/** Invalid messages in a row after which the app's socket is closed (Telnyx closes after 10). */
const MAX_INVALID_IN_A_ROW = 10;
/** Tokens of one talk cycle waiting to be spoken, at most. */
const MAX_QUEUED_TOKENS = 4096;

export class RelaySession {
  readonly sessionId = `VX${randomUUID().replaceAll('-', '')}`;
  /** `play` files being fetched now. */
  private fetches = 0;
  /** Languages the app asked for that no configured voice speaks (told once each). */
  private readonly unvoiced = new Set<string>();
  readonly stats: RelayStats = { tokens: 0, prompts: 0, interrupts: 0, errors: 0 };
  /** Settles once, with why the session ended. */
  readonly done: Promise<RelayOutcome>;
  private settle!: (outcome: RelayOutcome) => void;
  private ws: WebSocket | undefined;
  private ended = false;
  private invalidInARow = 0;
  private readonly limits: RelayLimits;
  private readonly rate: RateLimit;
  /** Keys of `sendDigits` not yet played. */
  private digitsPending = 0;
  /** The talk cycle taking tokens, until its `last`. */
  private open: TextCycle | undefined;
  /** Every talk cycle still speaking or queued, by its utterance id. */
  private readonly speaking = new Map<string, TalkCycle>();
  private language: { tts: string | undefined; transcription: string | undefined };
  /** The caller cut a talk cycle the app was still sending: its tokens are dropped until its `last` or the next prompt. */
  private discarding = false;
  /** What the app was last told (`agentSpeaking`, `clientSpeaking`), or would have been. */
  private agentSpeaking = false;
  private clientSpeaking = false;
  /** The last turn prompted (`last: true`) that no talk cycle answers yet: its timing. */
  private unanswered: (TurnTiming & { promptAt: number }) | undefined;

  constructor(
    private readonly host: RelayHost,
    private readonly settings: RelaySettings,
    private readonly log: Logger,
  ) {
    this.done = new Promise((resolve) => (this.settle = resolve));
    this.language = {
      tts: settings.language?.tts,
      transcription: settings.language?.transcription,
    };
    this.limits = { ...RELAY_LIMITS, ...settings.limits };
    this.rate = new RateLimit(this.limits.messagesPerSecond, this.limits.messageBurst);
  }

  /** The language the app last asked prompts to be transcribed in, if it did. */
  get transcriptionLanguage(): string | undefined {
    return this.language.transcription;
  }

  /** Opens the app's socket and says `setup` (then the welcome). Resolves with how the session ended. */
  start(): Promise<RelayOutcome> {
    const { headers, connectTimeoutMs, twilioAuthToken } = this.settings;
    const url = relayUrl(this.settings.url, this.host.setup, this.sessionId);
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, {
        headers: {
          ...headers,
          ...(twilioAuthToken === undefined
            ? {}
            : { 'X-Twilio-Signature': twilioSignature(twilioAuthToken, url) }),
        },
        handshakeTimeout: connectTimeoutMs,
        maxPayload: RELAY_MAX_MESSAGE_BYTES,
      });
    } catch (error) {
      this.finish({ reason: 'closed', detail: `cannot open ${url}: ${(error as Error).message}` });
      return this.done;
    }
    this.ws = ws;
    ws.on('open', () => {
      const { setup } = this.host;
      this.send({
        type: 'setup',
        sessionId: this.sessionId,
        accountSid: '',
        parentCallSid: '',
        forwardedFrom: '',
        callerName: '',
        callStatus: 'in-progress',
        ...setup,
      });
      if (this.settings.welcome)
        this.speak(this.settings.welcome, {
          interruptible: this.settings.welcomeInterruptible ?? this.settings.interruptible,
          preemptible: false,
          last: true,
        });
    });
    ws.on('message', (data, isBinary) => {
      if (this.ended) return;
      if (!this.rate.take(performance.now())) {
        this.log.warn({ perSecond: this.limits.messagesPerSecond }, 'relay app over its message rate');
        this.finish({ reason: 'closed', detail: 'message rate too high' }, CLOSE.policy);
        return;
      }
      if (isBinary) {
        this.refuse('binary messages are not part of ConversationRelay');
        return;
      }
      try {
        this.onMessage(rawText(data));
      } catch (error) {
        // A message we could not handle costs this session, never the process or another call.
        this.log.error({ err: (error as Error).message }, 'relay message failed; closing the session');
        this.finish({ reason: 'closed', detail: 'a message could not be handled' }, CLOSE.internalError);
      }
    });
    ws.on('error', (error) => this.log.warn({ err: error.message }, 'relay socket failed'));
    ws.on('close', (code, reason) =>
      this.finish({
        reason: 'closed',
        detail: `the app closed the socket (${code}${reason.length ? ` ${reason.toString()}` : ''})`,
      }),
    );
    return this.done;
  }

  /**
   * A turn of the caller's, transcribed (`last`, the default), or its words so far (`last: false`, a
   * partial prompt: cumulative, as ConversationRelay sends them). `timing`: how the turn came, for its
   * gap once the answer is heard.
   */
  prompt(
    text: string,
    lang: string | undefined,
    extension?: RelayExtension,
    options: { last?: boolean; timing?: TurnTiming | undefined } = {},
  ): void {
    if (this.ended || text.trim() === '') return;
    const last = options.last ?? true;
    if (last) {
      // A new turn: the app's tokens from now on answer it.
      this.discarding = false;
      this.unanswered = options.timing && { ...options.timing, promptAt: performance.now() };
    }
    this.stats.prompts++;
    this.send({
      type: 'prompt',
      voicePrompt: text,
      lang: promptLang(lang, this.language.transcription),
      last,
      ...(extension ? { voxbridge: extension } : {}),
    });
  }

  /**
   * The voice for `lang` (a talk cycle's first `text.lang`, else the session's `ttsLanguage`): the
   * configured voice of that tag, else of the same language in another region; else the relay's
   * voice, and the app is told once per tag that none speaks it.
   */
  private voiceFor(lang: string | undefined): string | undefined {
    const languages = this.settings.languages ?? {};
    if (lang === undefined || Object.keys(languages).length === 0) return this.settings.voiceId;
    const wanted = lang.toLowerCase();
    const primary = wanted.split('-')[0];
    let match: { voiceId: string } | undefined;
    for (const [tag, entry] of Object.entries(languages)) {
      const t = tag.toLowerCase();
      if (t === wanted) return entry.voiceId;
      if (match === undefined && t.split('-')[0] === primary) match = entry;
    }
    if (match) return match.voiceId;
    if (!this.unvoiced.has(wanted) && this.unvoiced.size < MAX_UNVOICED) {
      this.unvoiced.add(wanted);
      this.error(`no voice is configured for language ${lang.slice(0, 35)}: the default voice speaks it`);
    }
    return this.settings.voiceId;
  }

  /** A key the caller pressed: to the app when DTMF is on, and it may cut speech that allows it. */
  dtmf(digit: string): void {
    if (this.ended) return;
    if (this.settings.dtmf) this.send({ type: 'dtmf', digit });
    const cuttable = [...this.speaking.values()].some(
      (c) => c.interruptible === 'dtmf' || c.interruptible === 'any',
    );
    if (cuttable) {
      const r = this.host.interrupt();
      if (r.interrupted) this.interrupted(r);
    }
  }

  /**
   * The caller cut the app's speech (a barge-in on the host, or one that was being judged and was
   * real): tell the app what was heard (of a resumed talk cycle, all of it, before and after the
   * backchannel).
   */
  interrupted(r: { heardText: string; playedMs: number; utteranceId?: string | undefined }): void {
    if (this.ended) return;
    const cycle = r.utteranceId === undefined ? undefined : this.speaking.get(r.utteranceId);
    if (r.utteranceId !== undefined && !cycle) return; // not ours (the host said something else)
    for (const c of this.speaking.values()) c.cut = true;
    // Tokens still coming for the cycle that was cut are not spoken.
    if (this.open?.cut) {
      this.discarding = !this.open.complete;
      this.closeCycle(this.open);
    }
    this.stats.interrupts++;
    // Silent now; what each cut cycle was heard of (`tokensPlayed`) follows, as its utterance ends.
    this.agentSpeakingNow(false);
    const heardText = cycle ? heardOf(cycle, r.heardText) : r.heardText;
    this.send({
      type: 'interrupt',
      utteranceUntilInterrupt: heardText,
      durationUntilInterruptMs: Math.round(r.playedMs),
    });
    // A cycle held for the decision ended then: what was heard of it follows the interrupt.
    if (cycle?.suspended) {
      cycle.suspended = undefined;
      this.speaking.delete(cycle.handle.id);
      this.closeCycle(cycle);
      if (heardText !== '' && this.asked('tokens-played'))
        this.send({ type: 'info', name: 'tokensPlayed', value: heardText });
    }
  }

  /**
   * A barge-in cut the talk cycle of `r.utteranceId`, and the host holds it while the caller's turn
   * says whether it was a backchannel: the app is told nothing yet, and its tokens for the cycle wait.
   * False when there is nothing to hold (not one of the app's text cycles, or none was cut).
   */
  suspend(r: { heardText: string; playedMs: number; utteranceId?: string | undefined }): boolean {
    if (this.ended || r.utteranceId === undefined) return false;
    const cycle = this.speaking.get(r.utteranceId);
    if (!cycle?.tokens || cycle.cut || cycle.suspended) return false;
    cycle.suspended = { heardText: r.heardText, playedMs: r.playedMs };
    return true;
  }

  /** The held barge-in was real: the app gets its `interrupt`, as it would have at once. */
  bargeInWasReal(): void {
    const cycle = this.suspendedCycle();
    if (!cycle?.suspended) return;
    this.interrupted({ ...cycle.suspended, utteranceId: cycle.handle.id });
  }

  /**
   * The held barge-in was a backchannel: the cycle goes on, from the first word the caller did not
   * hear whole, before anything the host queued meanwhile; the app is told nothing. The rest's
   * utterance id, or undefined when nothing was left to say.
   */
  bargeInWasBackchannel(): string | undefined {
    const cycle = this.suspendedCycle();
    const cut = cycle?.suspended;
    if (!cycle || !cut || this.ended) return undefined;
    cycle.suspended = undefined;
    const left = restOf(cycle, cut.heardText);
    this.speaking.delete(cycle.handle.id);
    if (!left || (left.rest.trim() === '' && cycle.complete)) {
      this.closeCycle(cycle);
      return undefined;
    }
    const tokens = new AsyncQueue<string>(MAX_QUEUED_TOKENS);
    tokens.tryPush(left.rest);
    let handle: UtteranceHandle;
    try {
      handle = this.host.say(tokens, {
        interruptible: cycle.interruptible === 'speech' || cycle.interruptible === 'any',
        voiceId: cycle.voiceId,
        first: true,
      });
    } catch (error) {
      this.error(`this answer cannot be resumed: ${(error as Error).message}`);
      this.closeCycle(cycle);
      return undefined;
    }
    cycle.from = left.from;
    cycle.tokens = tokens;
    cycle.handle = handle;
    cycle.heard = false;
    if (cycle.complete) tokens.close();
    this.track(cycle);
    return handle.id;
  }

  /** The talk cycle held for a barge-in's decision, if one is. */
  private suspendedCycle(): TalkCycle | undefined {
    for (const c of this.speaking.values()) if (c.suspended) return c;
    return undefined;
  }

  /**
   * The caller began to speak (the onset of their speech), or their turn ended: `clientSpeaking` on
   * or off, once each, to an app that asked for speaker events.
   */
  callerSpeaking(speaking: boolean): void {
    if (this.ended || this.clientSpeaking === speaking) return;
    this.clientSpeaking = speaking;
    if (this.asked('speaker-events'))
      this.send({ type: 'info', name: 'clientSpeaking', value: speaking ? 'on' : 'off', ts: Date.now() });
  }

  /** The host is going away (the call ended): close the app's socket. */
  close(): void {
    this.finish({ reason: 'host-ended' });
  }

  private onMessage(data: string): void {
    if (this.ended) return;
    let message: FromApp;
    try {
      message = parseFromApp(data);
    } catch (error) {
      if (!(error instanceof RelayParseError)) throw error;
      this.refuse(error.message);
      return;
    }
    this.invalidInARow = 0;
    switch (message.type) {
      case 'text':
        this.stats.tokens++;
        this.speak(message.token, {
          interruptible: message.interruptible ?? this.settings.interruptible,
          preemptible: message.preemptible ?? this.settings.preemptible ?? false,
          last: message.last ?? false,
          lang: message.lang,
        });
        return;
      case 'play':
        this.play(message.source, {
          loop: message.loop ?? 1,
          interruptible: message.interruptible ?? this.settings.interruptible,
          preemptible: message.preemptible ?? this.settings.preemptible ?? false,
        });
        return;
      case 'sendDigits': {
        const send = this.host.sendDigits;
        if (!send) {
          this.error(`sendDigits is not possible on ${this.host.setup.voxbridge.gateway ?? 'this line'}`);
          return;
        }
        const keys = message.digits.length;
        if (this.digitsPending + keys > this.limits.pendingDigits) {
          this.error(
            `sendDigits refused: ${this.digitsPending} keys are still to be played (at most ${this.limits.pendingDigits} wait)`,
          );
          return;
        }
        this.digitsPending += keys;
        send(message.digits)
          .catch((error: unknown) => this.error(`sendDigits failed: ${(error as Error).message}`))
          .finally(() => (this.digitsPending -= keys));
        return;
      }
      case 'language':
        this.language = {
          tts: message.ttsLanguage ?? this.language.tts,
          transcription: message.transcriptionLanguage ?? this.language.transcription,
        };
        return;
      case 'end':
        this.finish({ reason: 'end', handoffData: message.handoffData });
        return;
    }
  }

  /** A token of the app's: into the open talk cycle, or the first of a new one. */
  private speak(
    token: string,
    o: { interruptible: Interruptible; preemptible: boolean; last: boolean; lang?: string | undefined },
  ): void {
    if (this.discarding) {
      if (o.last) this.discarding = false;
      return;
    }
    let cycle = this.open;
    if (!cycle) {
      if (!this.makeRoom()) {
        // Its tokens up to its `last` go with it.
        this.discarding = !o.last;
        return;
      }
      const tokens = new AsyncQueue<string>(MAX_QUEUED_TOKENS);
      const voiceId = this.voiceFor(o.lang ?? this.language.tts);
      let handle: UtteranceHandle;
      try {
        handle = this.host.say(tokens, {
          interruptible: o.interruptible === 'speech' || o.interruptible === 'any',
          voiceId,
        });
      } catch (error) {
        // The host would not take it (its queue is full, the call is ending).
        this.error(`this answer cannot be spoken: ${(error as Error).message}`);
        this.discarding = !o.last;
        return;
      }
      cycle = this.track({ ...this.cycleOf(handle, o, voiceId), tokens });
      this.open = cycle;
    }
    if (!cycle.cut && token !== '') {
      cycle.chars += token.length;
      if (cycle.chars > this.limits.cycleChars) {
        this.error(
          `more than ${this.limits.cycleChars} characters in one talk cycle: the rest of it is dropped`,
        );
        cycle.cut = true;
      } else if (cycle.suspended) {
        // Held for a barge-in's decision: kept for the rest, should the answer resume.
        cycle.said += token;
      } else if (cycle.tokens?.tryPush(token)) {
        cycle.said += token;
      } else {
        this.error(
          `more than ${MAX_QUEUED_TOKENS} tokens waiting to be spoken: the rest of this talk cycle is dropped`,
        );
        cycle.cut = true;
      }
    }
    if (o.last) {
      cycle.complete = true;
      // A held cycle keeps its place until the decision; new tokens start the next cycle.
      if (cycle.suspended) this.open = undefined;
      else this.closeCycle(cycle);
    }
  }

  /** A talk cycle of `handle`'s; the answer to the last turn prompted, if none answered it yet. */
  private cycleOf(
    handle: UtteranceHandle,
    o: { interruptible: Interruptible; preemptible: boolean },
    voiceId: string | undefined,
  ): TalkCycle {
    const turn = this.unanswered;
    this.unanswered = undefined;
    return newCycle(handle, o, voiceId, turn && { ...turn, appMs: performance.now() - turn.promptAt });
  }

  /**
   * A talk cycle begun: counted among those speaking until its utterance ends, then closed. The app
   * that asked is told when it begins to be heard and when it stops (`agentSpeaking`; the host's
   * utterances are heard one after another, the end of one before the start of the next), then what
   * was heard of it (`tokensPlayed`).
   */
  private track<C extends TalkCycle>(cycle: C): C {
    const { handle } = cycle;
    const { id } = handle;
    this.speaking.set(id, cycle);
    // `audible` settles first: a cycle's start is handled before its end.
    void handle.audible.then((heard) => {
      if (!heard || cycle.handle !== handle) return;
      cycle.heard = true;
      this.agentSpeakingNow(true);
      // The answer's first audio is out: the turn's gap is known now.
      if (handle.metrics) this.answered(cycle, handle.metrics);
    });
    void handle.result.then((result) => {
      // Resumed (a new utterance speaks it now), or ended as the barge-in that held it was decided.
      if (cycle.handle !== handle || this.speaking.get(id) !== cycle) return;
      const audible = (): boolean => [...this.speaking.values()].some((c) => c.heard && !c.suspended);
      if (cycle.suspended) {
        // Held for the barge-in's decision: silent now, and nothing else is told until it comes.
        if (cycle.heard && !audible()) this.agentSpeakingNow(false);
        cycle.heard = false;
        this.answered(cycle, result.metrics);
        return;
      }
      this.speaking.delete(id);
      this.closeCycle(cycle);
      if (cycle.heard && !audible()) this.agentSpeakingNow(false);
      this.answered(cycle, result.metrics);
      const heardText = heardOf(cycle, result.heardText);
      // A play has no tokens: there is nothing of its to report.
      if (cycle.tokens && heardText !== '' && this.asked('tokens-played'))
        this.send({ type: 'info', name: 'tokensPlayed', value: heardText });
    });
    return cycle;
  }

  /** The answer to a caller's turn was heard: the turn's whole gap goes to the host, once. */
  private answered(cycle: TalkCycle, metrics: Readonly<UtteranceMetrics>): void {
    const gap = gapOf(cycle, metrics);
    if (!gap) return;
    cycle.answering = undefined;
    this.host.turnGap?.(gap);
  }

  /** The app's speech began or stopped being heard: `agentSpeaking`, once each way. */
  private agentSpeakingNow(speaking: boolean): void {
    if (this.agentSpeaking === speaking) return;
    this.agentSpeaking = speaking;
    if (this.asked('speaker-events'))
      this.send({ type: 'info', name: 'agentSpeaking', value: speaking ? 'on' : 'off', ts: Date.now() });
  }

  /** Whether the app asked for `option`'s `info` messages. */
  private asked(option: RelayInfoOption): boolean {
    return this.settings.events?.has(option) ?? false;
  }

  /**
   * Room for a new talk cycle: one still speaking that may be preempted gives way to it; false (and
   * an `error` to the app) when as many as the limit are queued or speaking already.
   */
  private makeRoom(): boolean {
    for (const c of this.speaking.values())
      if (c.preemptible && !c.cut) {
        c.cut = true;
        const r = this.host.interrupt();
        if (r.interrupted) this.log.debug({ heardText: r.heardText }, 'talk cycle preempted');
      }
    if (this.speaking.size < this.limits.cycles) return true;
    this.error(
      `${this.speaking.size} answers are already waiting to be spoken: this one is dropped (at most ${this.limits.cycles})`,
    );
    return false;
  }

  /**
   * A `play`: its own talk cycle, in its place in the queue while the file is fetched (play.ts); a
   * source it may not fetch, or a file that fails, is an `error` to the app and plays nothing.
   */
  private play(
    source: string,
    o: { loop: number; interruptible: Interruptible; preemptible: boolean },
  ): void {
    let url: URL;
    try {
      url = playUrl(source, this.settings.play);
    } catch (error) {
      this.error((error as Error).message);
      return;
    }
    if (this.fetches >= MAX_PLAY_FETCHES) {
      this.error(
        `play refused: ${this.fetches} files are being fetched already (at most ${MAX_PLAY_FETCHES})`,
      );
      return;
    }
    if (!this.makeRoom()) return;
    const fetching = new AbortController();
    const audio = fetchPlay(url, this.settings.play!, fetching.signal);
    this.fetches++;
    audio.then(
      () => this.fetches--,
      (error: unknown) => {
        this.fetches--;
        if (!fetching.signal.aborted) this.error((error as Error).message);
      },
    );
    let handle: UtteranceHandle;
    try {
      handle = this.host.say(
        { audio, text: '', repeat: o.loop === 0 ? LOOP_FOREVER : o.loop },
        { interruptible: o.interruptible === 'speech' || o.interruptible === 'any' },
      );
    } catch (error) {
      fetching.abort();
      this.error(`this play cannot be played: ${(error as Error).message}`);
      return;
    }
    this.track({ ...this.cycleOf(handle, o, undefined), fetching });
  }

  /**
   * Nothing more for this talk cycle: what is queued of its tokens is spoken, then its utterance ends;
   * a play's fetch not done yet (its utterance was cut, or the session ended) is stopped.
   */
  private closeCycle(cycle: TalkCycle): void {
    cycle.tokens?.close();
    cycle.fetching?.abort();
    if (this.open === cycle) this.open = undefined;
  }

  /** An invalid message: `error` to the app; too many in a row close its socket. */
  private refuse(description: string): void {
    this.error(description);
    if (++this.invalidInARow >= MAX_INVALID_IN_A_ROW) {
      this.log.warn(
        { invalid: this.invalidInARow },
        'relay app sent only invalid messages; closing its socket',
      );
      this.finish(
        { reason: 'closed', detail: `${this.invalidInARow} invalid messages in a row` },
        CLOSE.policy,
      );
    }
  }

  private error(description: string): void {
    this.stats.errors++;
    this.send({ type: 'error', description });
  }

  private send(message: ToApp): void {
    const ws = this.ws;
    if (this.ended || !ws || ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > this.limits.unreadBytes) {
      this.log.warn({ unreadBytes: ws.bufferedAmount }, 'relay app is not reading its socket; closing it');
      this.finish({ reason: 'closed', detail: 'the app does not read its socket' }, CLOSE.policy);
      return;
    }
    ws.send(serializeToApp(message));
  }

  private finish(outcome: RelayOutcome, code: number = CLOSE.normal): void {
    if (this.ended) return;
    this.ended = true;
    for (const cycle of this.speaking.values()) this.closeCycle(cycle);
    if (this.open) this.closeCycle(this.open);
    const ws = this.ws;
    if (ws && (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING)) {
      if (ws.readyState === WebSocket.OPEN) {
        ws.close(code, outcome.reason);
        // A well-behaved app answers the close at once; one that was flooding or not reading is cut,
        // and what it still sends is not read.
        if (code !== CLOSE.normal) {
          ws.pause();
          setTimeout(() => ws.terminate(), this.limits.closeGraceMs).unref();
        }
      } else ws.terminate();
    }
    this.settle(outcome);
  }
}
