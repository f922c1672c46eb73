/**
 * IVR flows as declared in the config: named graphs of nodes that speak, collect DTMF digits or a
 * spoken answer, branch, call a webhook and hang up. Validated once at start; a bad flow stops the process with a message
 * naming the flow and the node.
 */
import { z } from 'zod';
import { CallControlError, parseCallTarget } from '../call-control/index.js';
import { DEFAULT_MIN_CONFIDENCE } from '../recognition/recognizer.js';

const nodeName = z.string().regex(/^[A-Za-z0-9_-]+$/, 'node names are letters, digits, _ and -');
const digitKey = z.string().regex(/^[0-9*#A-D]+$/, 'branch keys are DTMF digits (0-9, *, #, A-D)');
/**
 * One spoken form of a branch: words (the recogniser's dictionary says which it knows; an unknown one
 * stops the start, named), or a built-in set, `$yes` / `$no`.
 */
const spokenPhrase = z
  .string()
  .max(200)
  .regex(
    /^(?:\$yes|\$no|[\p{L}'-]+(?: [\p{L}'-]+)*)$/u,
    'a spoken form is words (letters, apostrophes, hyphens; one space between words), or $yes / $no',
  );

/** What a node may say: the text, and how. */
const speech = {
  /** Voice for this node; default the flow's, then the app's. */
  voice: z.string().min(1).optional(),
  /** Whether the caller's voice (or a key press) may cut it. Default true. */
  bargeIn: z.boolean().default(true),
};

const sayNode = z.strictObject({
  type: z.literal('say'),
  text: z.string().min(1),
  ...speech,
  next: nodeName,
});

const gatherNode = z.strictObject({
  type: z.literal('gather'),
  /** Spoken before waiting; again on every retry. */
  prompt: z.string().min(1).optional(),
  ...speech,
  /** Digits to collect; the gather ends early on `finishOnKey`. Default 1. */
  digits: z.number().int().min(1).max(32).default(1),
  finishOnKey: z
    .string()
    .regex(/^[*#]$/)
    .optional(),
  /** Silence after the prompt before it counts as no input. Default 5000 ms. */
  timeoutMs: z.number().int().min(500).max(120_000).default(5000),
  /** Where each collected digit string goes. */
  branches: z.record(digitKey, nodeName),
  /** Where any other input goes; default: say the prompt again (a retry). */
  otherwise: nodeName.optional(),
  /** Prompts after the first before `onFail`. Default 2. */
  retries: z.number().int().min(0).max(10).default(2),
  /** After the retries are spent; default hang up. */
  onFail: nodeName.optional(),
  /**
   * What the caller may answer with: keys (`dtmf`), their voice (`speech`), or both. Default `[dtmf]`.
   * With speech, the caller's next turn (cut by the barge-in VAD) is recognised against the node's
   * grammar, heard from the first syllable even over the prompt; a key still wins.
   */
  input: z
    .array(z.enum(['dtmf', 'speech']))
    .min(1)
    .max(2)
    .refine((input) => new Set(input).size === input.length, 'names each input once')
    .default(['dtmf']),
  /** Spoken forms per branch, keyed like `branches`: `{ '1': [billing, my bill], '2': ['$yes'] }`. */
  speech: z.record(digitKey, z.array(spokenPhrase).min(1).max(32)).optional(),
  /**
   * With speech: the keys' names ("three", "star", "pound", "four one five") count as pressing them.
   * Default: true when the node has no spoken forms (`speech`), else false (mixed into a menu of
   * phrases they make its choices less often right).
   */
  spokenDigits: z.boolean().optional(),
  /** With speech: carrier words around a spoken form ("I'd like", "please") are allowed. Default true. */
  carriers: z.boolean().default(true),
  /** With speech: a recognition less confident than this is a no-match (the retry). */
  minConfidence: z.number().min(0).max(1).default(DEFAULT_MIN_CONFIDENCE),
});

const webhookNode = z.strictObject({
  type: z.literal('webhook'),
  url: z.url({ protocol: /^https?$/ }),
  /** The event name sent in the body. */
  event: z.string().min(1),
  next: nodeName,
});

const hangupNode = z.strictObject({
  type: z.literal('hangup'),
  /** Said (without barge-in) before hanging up. */
  text: z.string().min(1).optional(),
  voice: z.string().min(1).optional(),
});

const relayNode = z.strictObject({
  type: z.literal('relay'),
  /** A relay named under `relays:` in the config: an app on a WebSocket drives the call. */
  relay: z.string().min(1),
  /** Where the call goes when the app's socket closes or fails; default: hang up. */
  onClose: nodeName.optional(),
});

/** An E.164 number or a SIP URI, as the call-control ports take them. */
const callTarget = z
  .string()
  .max(256)
  .refine(
    (to) => {
      try {
        parseCallTarget(to, 'twilio', 'transfer');
        return true;
      } catch (error) {
        if (error instanceof CallControlError) return false;
        throw error;
      }
    },
    { message: 'an E.164 number (+15551234567) or a SIP URI (sip:agent@pbx.example.com)' },
  );

const transferNode = z
  .strictObject({
    type: z.literal('transfer'),
    /** Whom the caller is sent to. */
    to: callTarget,
    /** `cold`: straight to the target; `warm`: the caller waits while the target hears `summary` first. */
    mode: z.enum(['cold', 'warm']).default('cold'),
    /** Said (without barge-in) before transferring. */
    text: z.string().min(1).optional(),
    voice: z.string().min(1).optional(),
    /** The caller id the target sees (E.164); a warm transfer on Twilio needs one. */
    callerId: z
      .string()
      .regex(/^\+[1-9]\d{1,14}$/, 'an E.164 number')
      .optional(),
    /** How long the target may ring (s). Default 30. */
    timeoutSeconds: z.number().int().min(5).max(600).default(30),
    /** Warm: what the target hears before the caller is put through (the gateway's own text-to-speech). */
    summary: z.string().min(1).max(4000).optional(),
    /** Warm: an audio file the target hears instead of `summary`. */
    summaryAudioUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Warm: an audio file the caller hears while waiting, where the gateway can play one. */
    holdMusicUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** Where the flow goes when the transfer cannot be made; default: hang up. */
    onFail: nodeName.optional(),
  })
  .superRefine((node, ctx) => {
    if (node.summary !== undefined && node.summaryAudioUrl !== undefined)
      ctx.addIssue({ code: 'custom', path: ['summaryAudioUrl'], message: 'give summary or summaryAudioUrl' });
    if (node.mode === 'cold')
      for (const key of ['summary', 'summaryAudioUrl', 'holdMusicUrl'] as const)
        if (node[key] !== undefined)
          ctx.addIssue({ code: 'custom', path: [key], message: 'is for a warm transfer' });
  });

/**
 * Waits (silently) for the answering-machine detector's decision on the callee's audio and branches on
 * it. A decision that does not come within `timeoutMs` (no audio reached the call) is `unknown`.
 */
const detectMachineNode = z.strictObject({
  type: z.literal('detect-machine'),
  /** A person answered (a short "hello?" then silence). */
  human: nodeName,
  /** A voicemail greeting, an IVR menu, or a beep. */
  machine: nodeName,
  /** Nothing said, or no decision in time; default: `human`'s node. */
  unknown: nodeName.optional(),
  /** The longest wait for the decision (ms). Default 10 000, within [1000, 60 000]. */
  timeoutMs: z.number().int().min(1000).max(60_000).default(10_000),
});

/**
 * Leaves a message on a machine: waits for the end of its greeting (its beep, or silence after it) and
 * then speaks `text`, which nothing cuts (the greeting's tail is no barge-in).
 */
const voicemailNode = z.strictObject({
  type: z.literal('voicemail'),
  /** The message. */
  text: z.string().min(1).max(4000),
  voice: z.string().min(1).optional(),
  /** Said anyway when the greeting has not ended by then (ms). Default 30 000, within [1000, 120 000]. */
  maxWaitMs: z.number().int().min(1000).max(120_000).default(30_000),
  /** Where the flow goes after the message; default: hang up. */
  next: nodeName.optional(),
});

/** `host[:port]` as a URL has it. */
const hostName = z
  .string()
  .regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/, 'a host, or host:port');

const twimlNode = z.strictObject({
  type: z.literal('twiml'),
  /** The app's TwiML webhook, requested as Twilio requests it when the call comes in. */
  url: z.url({ protocol: /^https?$/ }),
  method: z.enum(['GET', 'POST']).default('POST'),
  /**
   * Hosts besides the webhook's that its TwiML may send the call to: `<Play>` files, `<Redirect>` and
   * `action` URLs, the `<ConversationRelay>` socket. Nothing else is ever fetched.
   */
  hosts: z.array(hostName).max(64).default([]),
  /** Voice for `<Say>` and the relay when the TwiML names none this config maps; default the flow's. */
  voice: z.string().min(1).optional(),
  /** TwiML voice names (`<Say voice>`, `<ConversationRelay voice>`, `<Language voice>`) → voices of the speech service. */
  voices: z.record(z.string().min(1).max(200), z.string().min(1)).default({}),
  /** Each webhook request, at most (Twilio's: 15 s). */
  timeoutMs: z.number().int().min(1000).max(60_000).default(15_000),
  /** How long the relay app's socket may take to open. */
  connectTimeoutMs: z.number().int().min(500).max(60_000).default(10_000),
  /** Where the call goes when the webhook fails or answers TwiML voxbridge cannot run; default: hang up. */
  onError: nodeName.optional(),
});

export const flowNodeSchema = z.discriminatedUnion('type', [
  sayNode,
  gatherNode,
  webhookNode,
  hangupNode,
  relayNode,
  twimlNode,
  transferNode,
  detectMachineNode,
  voicemailNode,
]);

export const flowSchema = z
  .strictObject({
    start: nodeName,
    voice: z.string().min(1).optional(),
    /**
     * After the caller barges in, how long to wait for a key before the flow speaks again (it has
     * just been talked over). At least 5000 ms.
     */
    bargeInWaitMs: z.number().int().min(5000).max(60_000).default(5000),
    /** Every call event of this flow is also POSTed here (best effort). */
    webhook: z.url({ protocol: /^https?$/ }).optional(),
    nodes: z.record(nodeName, flowNodeSchema),
  })
  .superRefine((flow, ctx) => {
    const names = new Set(Object.keys(flow.nodes));
    const check = (target: string | undefined, path: Array<string | number>): void => {
      if (target !== undefined && !names.has(target))
        ctx.addIssue({ code: 'custom', path, message: `goes to unknown node "${target}"` });
    };
    check(flow.start, ['start']);
    for (const [name, node] of Object.entries(flow.nodes)) {
      const at = ['nodes', name];
      if (node.type === 'say' || node.type === 'webhook') check(node.next, [...at, 'next']);
      if (node.type === 'relay') check(node.onClose, [...at, 'onClose']);
      if (node.type === 'twiml') check(node.onError, [...at, 'onError']);
      if (node.type === 'transfer') check(node.onFail, [...at, 'onFail']);
      if (node.type === 'voicemail') check(node.next, [...at, 'next']);
      if (node.type === 'detect-machine')
        for (const branch of ['human', 'machine', 'unknown'] as const) check(node[branch], [...at, branch]);
      if (node.type === 'gather') {
        for (const [digits, target] of Object.entries(node.branches))
          check(target, [...at, 'branches', digits]);
        check(node.otherwise, [...at, 'otherwise']);
        check(node.onFail, [...at, 'onFail']);
        for (const digits of Object.keys(node.branches)) {
          if (digits.length > node.digits)
            ctx.addIssue({
              code: 'custom',
              path: [...at, 'branches', digits],
              message: `has ${digits.length} digits but the node collects ${node.digits}`,
            });
        }
        checkSpeech(node, at, ctx);
      }
    }
  });

export type GatherNode = z.infer<typeof gatherNode>;

/** A gather's spoken forms name its branches, and a gather that listens has something to hear. */
function checkSpeech(node: GatherNode, at: Array<string | number>, ctx: z.RefinementCtx): void {
  const listens = node.input.includes('speech');
  if (node.speech === undefined) {
    if (listens && node.spokenDigits === false)
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'speech'],
        message: 'the node listens for speech but has no spoken forms, and spokenDigits is false',
      });
    return;
  }
  if (!listens)
    ctx.addIssue({
      code: 'custom',
      path: [...at, 'speech'],
      message: 'spoken forms need `input` to include speech',
    });
  for (const key of Object.keys(node.speech))
    if (!(key in node.branches))
      ctx.addIssue({ code: 'custom', path: [...at, 'speech', key], message: `names no branch "${key}"` });
}

export const flowsSchema = z.record(nodeName, flowSchema);

export type Flow = z.infer<typeof flowSchema>;
export type FlowNode = z.infer<typeof flowNodeSchema>;
export type TwimlNode = z.infer<typeof twimlNode>;
export type TransferNode = z.infer<typeof transferNode>;
export type Flows = z.infer<typeof flowsSchema>;
export type DetectMachineNode = z.infer<typeof detectMachineNode>;
export type VoicemailNode = z.infer<typeof voicemailNode>;

/** Whether a flow asks who answered (its call then runs the answering-machine detector). */
export function flowDetectsMachines(flow: Flow): boolean {
  return Object.values(flow.nodes).some((n) => n.type === 'detect-machine' || n.type === 'voicemail');
}
