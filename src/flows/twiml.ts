/**
 * A flow node `{type: twiml, url}`: the call is run by an app's TwiML webhook, as Twilio runs it. The
 * webhook is requested with the form parameters Twilio sends for a call, signed with
 * `X-Twilio-Signature` when `TWILIO_AUTH_TOKEN` is set; its answer's verbs run in order: `<Say>`,
 * `<Play>`, `<Pause>`, `<Hangup/>`, `<Reject/>`, `<Redirect>`, `<Connect>` with a
 * `<ConversationRelay>`, which hands the call to the app's socket, and `<Dial>`, which transfers the
 * caller through the call's port (the gateway's call control). When a relay session ends, the
 * `action` URL is requested with the session's fields and `HandoffData`, and its TwiML runs next
 * (without `action`, the next verb does). A `<Dial>` that transfers ends the node: the call is the
 * gateway's from then on, so its `action` is not requested (Twilio would request it once the dialled
 * call ends); one that fails requests its `action` with `DialCallStatus=failed`, or goes on to the
 * next verb. A document that ends hangs up, as Twilio does.
 *
 * What the webhook says is untrusted: the document is bounded (src/protocols/twiml.ts), each request
 * has a deadline and a size bound, no redirect is followed, a call fetches at most `MAX_DOCUMENTS`
 * documents, and nothing is fetched from a host other than the webhook's and the node's `hosts`.
 * A verb voxbridge does not run, or a document it cannot read, is a logged error and the node's
 * `onError` (default: hang up), never a silent hang.
 */
import { BodyTooLargeError, readBodyCapped } from '../http/fetch-body.js';
import {
  parseRelayInfoOptions,
  readBool,
  readInterruptible,
  type Interruptible,
} from '../protocols/conversation-relay.js';
import {
  parseTwiml,
  TWIML_LIMITS,
  TwimlError,
  type ConversationRelayNoun,
  type TwimlVerb,
} from '../protocols/twiml.js';
import { twilioSignature } from '../protocols/twilio-signature.js';
import { DEFAULT_BACKCHANNELS } from '../relay/backchannel.js';
import type { RelaySettings } from '../relay/host.js';
import { fetchPlay, LOOP_FOREVER, type PlayLimits } from '../relay/play.js';
import type { FlowCall, FlowRelayOutcome, FlowTransferOutcome } from './port.js';
import type { TwimlNode } from './schema.js';

/** TwiML documents one call may fetch (webhook, redirects, actions), at most: a redirect loop ends. */
export const MAX_DOCUMENTS = 100;
/** `<Play>` files: as a relay's `play`. */
const PLAY_MAX_BYTES = 10 * 1024 * 1024;
const PLAY_TIMEOUT_MS = 10_000;
/** `<Say loop="0">` repeats this many times at most (Twilio: "until the call ends"). */
const SAY_LOOP_FOREVER = 1000;
/** Twilio's API version, as its webhooks send it. */
const API_VERSION = '2010-04-01';

/** What a TwiML node needs besides the call: the Twilio token to sign with, and where to report. */
export interface TwimlContext {
  /** `TWILIO_AUTH_TOKEN`: requests and the relay's handshake are signed with it, as Twilio's are. */
  authToken: string | undefined;
  /** The flow's voice, when the node and the TwiML name none. */
  flowVoice: string | undefined;
  signal: AbortSignal;
  /** A step worth an event (`flow.twiml`): a verb run, a warning, an error. */
  report(detail: Record<string, unknown>): void;
}

/**
 * How a TwiML node ended: it hung up (or the document ended), a `<Dial>` transferred the caller, or it
 * failed and the flow goes to `onError`.
 */
export type TwimlOutcome = { end: 'hangup' } | { end: 'transfer' } | { end: 'error'; message: string };

/** Something in the webhook's answers voxbridge cannot run; its message is logged. */
export class TwimlRunError extends Error {
  override readonly name = 'TwimlRunError';
}

/** Runs node `node`'s webhook and the TwiML it answers on `call`. */
export async function runTwiml(
  node: TwimlNode,
  call: FlowCall,
  context: TwimlContext,
): Promise<TwimlOutcome> {
  const run = new TwimlRun(node, call, context);
  try {
    return { end: await run.run() };
  } catch (error) {
    if (context.signal.aborted) throw error;
    if (!(error instanceof TwimlRunError || error instanceof TwimlError)) throw error;
    context.report({ error: error.message });
    return { end: 'error', message: error.message };
  }
}

class TwimlRun {
  private readonly allowed: ReadonlySet<string>;
  private documents = 0;
  /** Warnings given once per call (an unmapped voice, an attribute voxbridge ignores). */
  private readonly warned = new Set<string>();
  private readonly base: Record<string, string>;

  constructor(
    private readonly node: TwimlNode,
    private readonly call: FlowCall,
    private readonly context: TwimlContext,
  ) {
    this.allowed = new Set([new URL(node.url).host, ...node.hosts]);
    const f = call.fields ?? { from: '', to: '', direction: 'inbound', accountSid: '' };
    this.base = {
      AccountSid: f.accountSid,
      ApiVersion: API_VERSION,
      CallSid: call.id,
      CallStatus: 'in-progress',
      Called: f.to,
      Caller: f.from,
      Direction: f.direction,
      From: f.from,
      To: f.to,
    };
  }

  async run(): Promise<'hangup' | 'transfer'> {
    const { signal } = this.context;
    let at = new URL(this.node.url);
    let verbs = await this.fetchDocument(at, this.node.method, {});
    let i = 0;
    for (;;) {
      signal.throwIfAborted();
      const verb = verbs[i++];
      if (verb === undefined) {
        this.context.report({ verb: 'end of document' });
        await this.call.hangup();
        return 'hangup';
      }
      this.context.report({ verb: verb.verb, ...(verb.verb === 'Unsupported' ? { name: verb.name } : {}) });
      switch (verb.verb) {
        case 'Say':
          await this.say(verb);
          break;
        case 'Play':
          await this.play(this.resolve(verb.url, at, '<Play>'), verb.loop);
          break;
        case 'Pause':
          if (!this.call.wait) throw new TwimlRunError('<Pause> cannot run on this call');
          await this.call.wait(verb.seconds * 1000, signal);
          break;
        case 'Hangup':
        case 'Reject':
          await this.call.hangup();
          return 'hangup';
        case 'Redirect':
          at = this.resolve(verb.url, at, '<Redirect>');
          verbs = await this.fetchDocument(at, verb.method, {});
          i = 0;
          break;
        case 'Connect': {
          const action =
            verb.action === undefined ? undefined : this.resolve(verb.action, at, '<Connect action>');
          const startedAt = performance.now();
          let outcome: FlowRelayOutcome;
          try {
            outcome = await this.relay(verb.relay);
          } catch (error) {
            // The caller hung up: the app still hears of it (Twilio's `completed`), its answer unread.
            if (signal.aborted && action)
              void this.tellHungUp(action, verb.method, performance.now() - startedAt);
            throw error;
          }
          if (action === undefined) break;
          at = action;
          verbs = await this.fetchDocument(at, verb.method, sessionFields(outcome));
          i = 0;
          break;
        }
        case 'Dial': {
          const action =
            verb.action === undefined ? undefined : this.resolve(verb.action, at, '<Dial action>');
          if (await this.dial(verb, action !== undefined)) return 'transfer';
          if (action === undefined) break;
          // As Twilio: a dial that did not connect asks the action what the caller hears next.
          at = action;
          verbs = await this.fetchDocument(at, verb.method, {
            DialCallStatus: 'failed',
            DialCallDuration: '0',
            DialBridged: 'false',
          });
          i = 0;
          break;
        }
        case 'Unsupported':
          throw new TwimlRunError(`<${verb.name}> is TwiML voxbridge does not run`);
      }
    }
  }

  /** The `action` request after the caller hung up during the relay: best effort, its answer not run. */
  private async tellHungUp(url: URL, method: 'GET' | 'POST', durationMs: number): Promise<void> {
    const fields = {
      CallStatus: 'completed',
      SessionStatus: 'completed',
      SessionDuration: String(Math.round(durationMs / 1000)),
    };
    try {
      await this.request(url, method, fields, AbortSignal.timeout(this.node.timeoutMs));
    } catch (error) {
      this.context.report({
        warning: `the action request after the hang-up failed: ${(error as Error).message}`,
      });
    }
  }

  /** `raw` (absolute, or relative to the document's URL) as a URL on a host the node allows. */
  private resolve(raw: string, base: URL, what: string): URL {
    let url: URL;
    try {
      url = new URL(raw, base);
    } catch {
      throw new TwimlRunError(`${what} ${JSON.stringify(raw.slice(0, 200))} is not a URL`);
    }
    this.checkHost(url, what);
    return url;
  }

  private checkHost(url: URL, what: string): void {
    if (!this.allowed.has(url.host))
      throw new TwimlRunError(
        `${what}: ${url.host} is neither the webhook's host nor among the node's hosts; nothing is fetched from it`,
      );
  }

  /** Requests a TwiML document as Twilio does and reads its verbs. */
  private async fetchDocument(
    url: URL,
    method: 'GET' | 'POST',
    extra: Record<string, string>,
  ): Promise<TwimlVerb[]> {
    if (++this.documents > MAX_DOCUMENTS)
      throw new TwimlRunError(`over ${MAX_DOCUMENTS} TwiML documents in one call (a redirect loop?)`);
    // As Twilio's: the first request is for a call ringing; later ones for a call in progress.
    const fields = { ...(this.documents === 1 ? { CallStatus: 'ringing' } : {}), ...extra };
    const { signal } = this.context;
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(this.node.timeoutMs)]);
    let text: string;
    try {
      text = await this.request(url, method, fields, deadline);
    } catch (error) {
      signal.throwIfAborted();
      throw error;
    }
    try {
      return parseTwiml(text);
    } catch (error) {
      if (error instanceof TwimlError)
        throw new TwimlRunError(`${requestName(method, url)}: ${error.message}`);
      throw error;
    }
  }

  /**
   * One request as Twilio makes it: the call's fields and `fields` as form parameters (in the query for
   * a GET), signed when there is a token; resolves with the answer's text (bounded, UTF-8).
   */
  private async request(
    url: URL,
    method: 'GET' | 'POST',
    fields: Record<string, string>,
    signal: AbortSignal,
  ): Promise<string> {
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new TwimlRunError(`a TwiML URL is http or https, not ${url.protocol}`);
    this.checkHost(url, 'a TwiML URL');
    const params = { ...this.base, ...fields };
    const target = new URL(url);
    if (method === 'GET') for (const [k, v] of Object.entries(params)) target.searchParams.append(k, v);
    const { authToken } = this.context;
    const headers: Record<string, string> = {
      accept: 'application/xml, text/xml',
      'user-agent': 'voxbridge (TwiML)',
    };
    if (method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded';
    if (authToken !== undefined)
      headers['x-twilio-signature'] = twilioSignature(
        authToken,
        target.href,
        method === 'POST' ? params : {},
      );
    const where = requestName(method, url);
    let res: Response;
    try {
      res = await fetch(target, {
        method,
        headers,
        ...(method === 'POST' ? { body: new URLSearchParams(params).toString() } : {}),
        redirect: 'error',
        signal,
      });
    } catch (error) {
      throw new TwimlRunError(`${where} failed: ${(error as Error).message}`, { cause: error });
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new TwimlRunError(`${where} answered ${res.status}`);
    }
    try {
      const bytes = await readBodyCapped(res, TWIML_LIMITS.chars);
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch (error) {
      const why =
        error instanceof BodyTooLargeError ? error.message : `unreadable: ${(error as Error).message}`;
      throw new TwimlRunError(`${where}: ${why}`, { cause: error });
    }
  }

  /** A TwiML voice name as a voice of the speech service: the node's map, else undefined. */
  private mappedVoice(name: string | undefined): string | undefined {
    if (name === undefined) return undefined;
    const mapped = this.node.voices[name];
    if (mapped === undefined)
      this.warnOnce(
        `voice ${name}`,
        `voice "${name.slice(0, 100)}" is not under the node's voices: the default voice speaks`,
      );
    return mapped;
  }

  private defaultVoice(): string | undefined {
    return this.node.voice ?? this.context.flowVoice;
  }

  private warnOnce(key: string, warning: string): void {
    if (this.warned.has(key) || this.warned.size >= 64) return;
    this.warned.add(key);
    this.context.report({ warning });
  }

  private async say(verb: Extract<TwimlVerb, { verb: 'Say' }>): Promise<void> {
    if (verb.text === '') return;
    const voiceId = this.mappedVoice(verb.voice) ?? this.defaultVoice();
    const times = verb.loop === 0 ? SAY_LOOP_FOREVER : Math.min(verb.loop, SAY_LOOP_FOREVER);
    for (let n = 0; n < times; n++) {
      this.context.signal.throwIfAborted();
      // As Twilio's: the caller's voice does not cut a <Say> (no <Gather> around it).
      const said = await this.call.say(verb.text, { ...(voiceId ? { voiceId } : {}), interruptible: false });
      if (said.status === 'failed') {
        this.warnOnce(`say failed`, '<Say> could not be spoken (the speech service failed)');
        return;
      }
    }
  }

  private async play(url: URL, loop: number): Promise<void> {
    if (!this.call.play) throw new TwimlRunError('<Play> cannot run on this call');
    const limits: PlayLimits = {
      hosts: [...this.allowed],
      maxBytes: PLAY_MAX_BYTES,
      timeoutMs: PLAY_TIMEOUT_MS,
    };
    const audio = fetchPlay(url, limits, this.context.signal);
    const played = await this.call.play(
      { audio, text: '', repeat: loop === 0 ? LOOP_FOREVER : Math.min(loop, LOOP_FOREVER) },
      { interruptible: false },
    );
    if (played.status === 'failed') {
      // As Twilio's: a file that cannot be played is skipped (and reported); the document goes on.
      const why = await audio.then(
        () => 'it could not be played',
        (error: unknown) => (error as Error).message,
      );
      this.context.report({ warning: `<Play> ${url.origin}${url.pathname}: ${why}` });
    }
  }

  /**
   * A `<Dial>` as a cold transfer through the call's port. True once the gateway has the caller; false
   * when the transfer failed (reported) and the call is still here.
   */
  private async dial(verb: Extract<TwimlVerb, { verb: 'Dial' }>, hasAction: boolean): Promise<boolean> {
    for (const name of verb.ignored)
      this.warnOnce(`dial ${name}`, `<Dial ${name.slice(0, 60)}> is taken but has no effect on voxbridge`);
    const to = verb.target.kind === 'number' ? verb.target.number : verb.target.uri;
    const outcome: FlowTransferOutcome = this.call.transfer
      ? await this.call.transfer(
          { to, mode: 'cold', callerId: verb.callerId, timeoutSeconds: verb.timeoutSeconds },
          this.context.signal,
        )
      : { ok: false, code: 'unsupported', message: 'this call cannot be transferred' };
    if (!outcome.ok) {
      this.context.report({ dial: 'failed', to, code: outcome.code, error: outcome.message });
      return false;
    }
    this.context.report({ dial: 'transferred', to });
    if (hasAction)
      this.warnOnce(
        'dial action',
        '<Dial action> is not requested after a transfer: the call has left voxbridge for the gateway',
      );
    return true;
  }

  private async relay(noun: ConversationRelayNoun): Promise<FlowRelayOutcome> {
    if (!this.call.relay) throw new TwimlRunError('<ConversationRelay> cannot run on this call');
    const settings = this.relaySettings(noun);
    const customParameters = Object.fromEntries(noun.parameters.map((p) => [p.name, p.value]));
    return this.call.relay({ name: 'twiml', settings, customParameters }, this.context.signal);
  }

  /** `<ConversationRelay>`'s attributes and children as a relay session's settings. */
  private relaySettings(noun: ConversationRelayNoun): RelaySettings {
    const a = noun.attributes;
    let url: URL;
    try {
      url = new URL(a['url']!);
    } catch {
      throw new TwimlRunError(
        `<ConversationRelay url> ${JSON.stringify(a['url']!.slice(0, 200))} is not a URL`,
      );
    }
    if (url.protocol !== 'wss:' && url.protocol !== 'ws:')
      throw new TwimlRunError(`<ConversationRelay url> is ws or wss, not ${url.protocol}`);
    this.checkHost(url, '<ConversationRelay url>');
    for (const name of Object.keys(a))
      if (!RELAY_ATTRIBUTES.has(name))
        this.warnOnce(
          `attribute ${name}`,
          `<ConversationRelay ${name.slice(0, 60)}> is not an attribute voxbridge knows: ignored`,
        );
    for (const name of IGNORED_ATTRIBUTES)
      if (a[name] !== undefined)
        this.warnOnce(
          `attribute ${name}`,
          `<ConversationRelay ${name}> is taken but has no effect on voxbridge`,
        );
    const interruptible = this.interruptibleOf(a['interruptible'], 'interruptible') ?? 'any';
    const welcomeInterruptible = this.interruptibleOf(
      a['welcomeGreetingInterruptible'],
      'welcomeGreetingInterruptible',
    );
    const tts = a['ttsLanguage'] ?? a['language'];
    const transcription = a['transcriptionLanguage'] ?? a['language'];
    const voiceId = this.relayVoice(a['voice'], a['ttsProvider']) ?? this.defaultVoice();
    const languages: Record<string, { voiceId: string }> = {};
    for (const l of noun.languages) {
      const v = this.relayVoice(l['voice'], l['ttsProvider'] ?? a['ttsProvider']);
      if (v !== undefined) languages[l['code']!] = { voiceId: v };
    }
    // With voices per language, the session's own language speaks in the session's voice.
    if (
      tts !== undefined &&
      voiceId !== undefined &&
      Object.keys(languages).length > 0 &&
      !(tts in languages)
    )
      languages[tts] = { voiceId };
    const info = parseRelayInfoOptions([a['debug'] ?? '', a['events'] ?? '']);
    if (info.unknown.length > 0)
      this.warnOnce(
        'info options',
        `<ConversationRelay debug/events>: ${info.unknown.slice(0, 5).join(' ').slice(0, 200)} unknown: ignored`,
      );
    return {
      url: url.href,
      headers: {},
      events: info.options,
      welcome: a['welcomeGreeting'] || undefined,
      welcomeInterruptible,
      interruptible,
      dtmf: readBool(a['dtmfDetection']) ?? false,
      preemptible: readBool(a['preemptible']) ?? false,
      voiceId,
      languages,
      language: { tts, transcription },
      play: { hosts: [...this.allowed], maxBytes: PLAY_MAX_BYTES, timeoutMs: PLAY_TIMEOUT_MS },
      connectTimeoutMs: this.node.connectTimeoutMs,
      twilioAuthToken: this.context.authToken,
      // Partial transcripts need realtime speech-to-text (`stt.mode`); with batch there are none.
      partialPrompts: readBool(a['partialPrompts']) ?? false,
      // Twilio's default: every barge-in interrupts; "true" lets acknowledgements pass (backchannel.ts).
      backchannels: readBool(a['ignorebackchannel']) === true ? DEFAULT_BACKCHANNELS : [],
    };
  }

  private interruptibleOf(raw: string | undefined, name: string): Interruptible | undefined {
    if (raw === undefined) return undefined;
    const value = readInterruptible(raw);
    if (value === undefined)
      throw new TwimlRunError(
        `<ConversationRelay ${name}="${raw.slice(0, 20)}">: any, none, speech, dtmf, true or false`,
      );
    return value;
  }

  /**
   * A relay voice: the node's map first; else, spoken by ElevenLabs (Twilio's provider for ElevenLabs
   * voices, and what voxbridge's speech service is compatible with), the voice id itself, without
   * Twilio's `-speed_stability_similarity` suffix; a voice of another provider is unmapped.
   */
  private relayVoice(name: string | undefined, provider: string | undefined): string | undefined {
    if (name === undefined) return undefined;
    const mapped = this.node.voices[name];
    if (mapped !== undefined) return mapped;
    if (provider === undefined || provider.toLowerCase() === 'elevenlabs')
      return name.replace(/-[\d.]+_[\d.]+_[\d.]+$/, '');
    this.warnOnce(
      `voice ${name}`,
      `voice "${name.slice(0, 100)}" of ${provider.slice(0, 40)} is not under the node's voices: the default voice speaks`,
    );
    return undefined;
  }
}

/** Attributes that are accepted and have no effect here: the speech services are voxbridge's own. */
const IGNORED_ATTRIBUTES = [
  'transcriptionProvider',
  'speechModel',
  'interruptSensitivity',
  'reportInputDuringAgentSpeech',
  'hints',
  'speechtimeout',
  'backgroundnoisereduction',
  'profanityFilter',
  'elevenlabsTextNormalization',
  'deepgramsmartformat',
  'intelligenceService',
];

/** ConversationRelay's attributes, as Twilio documents them (twilio-node 6.2.0): those run, and the rest. */
const RELAY_ATTRIBUTES = new Set([
  'url',
  'welcomeGreeting',
  'welcomeGreetingInterruptible',
  'language',
  'ttsLanguage',
  'ttsProvider',
  'voice',
  'transcriptionLanguage',
  'interruptible',
  'preemptible',
  'dtmfDetection',
  'events',
  'debug',
  'partialPrompts',
  'ignorebackchannel',
  ...IGNORED_ATTRIBUTES,
]);

/**
 * What the `action` URL is told of the session, as Twilio tells it: `ended` when the app said `end`
 * (with its `HandoffData`), `failed` when its socket closed (Twilio's error 64105).
 */
function sessionFields(outcome: FlowRelayOutcome): Record<string, string> {
  return {
    SessionId: outcome.sessionId ?? '',
    SessionStatus: outcome.reason === 'end' ? 'ended' : 'failed',
    SessionDuration: String(Math.round((outcome.durationMs ?? 0) / 1000)),
    ...(outcome.reason === 'end' && outcome.handoffData !== undefined
      ? { HandoffData: outcome.handoffData }
      : {}),
    ...(outcome.reason === 'closed'
      ? { ErrorCode: '64105', ErrorMessage: `Websocket ended: ${outcome.detail}`.slice(0, 500) }
      : {}),
  };
}

/** A request as logs name it: no query (a GET's holds the call's fields). */
function requestName(method: string, url: URL): string {
  return `${method} ${url.origin}${url.pathname}`;
}
