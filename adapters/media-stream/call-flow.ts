/**
 * The IVR flow a call runs: which one (the call's `flow` parameter, else the default), the keys the
 * caller pressed waiting for it, and its run, ended when the call ends.
 */
import type { Logger } from 'pino';
import type { MenuGrammar } from '../../src/recognition/grammar.js';
import { runFlow, type FlowCall, type FlowEvent, type GatherResult } from '../../src/flows/runner.js';
import type { Flow } from '../../src/flows/schema.js';
import type { Clock } from '../../src/speaker/clock.js';
import { DigitQueue } from './digit-queue.js';
import type { PostJson } from './webhooks.js';

/**
 * The flow named by the call's parameters, or the default one; an unknown name is logged and the
 * default runs instead. Undefined: the call runs no flow.
 */
export function chooseFlow(
  requested: string | undefined,
  settings: { defaultFlow: string | undefined; flows: Readonly<Record<string, Flow>> },
  log: Logger,
): { name: string; flow: Flow } | undefined {
  let name = requested ?? settings.defaultFlow;
  if (requested !== undefined && !(requested in settings.flows)) {
    log.warn({ flow: requested }, 'the call asks for an unknown flow; running the default');
    name = settings.defaultFlow;
  }
  const flow = name === undefined ? undefined : settings.flows[name];
  return name === undefined || flow === undefined ? undefined : { name, flow };
}

export interface CallFlowOptions {
  name: string;
  flow: Flow;
  /** The call as the flow sees it; its keys come from here (`pushDigit`), its waits from `clock`. */
  call: Omit<FlowCall, 'nextDigit' | 'wait'>;
  clock: Clock;
  onEvent: (event: FlowEvent) => void;
  /** The grammar of each of the flow's gathers that listen for speech, by node. */
  grammars?: ReadonlyMap<string, MenuGrammar> | undefined;
  /** What answered each gather (keys or a spoken turn), and where it sent the flow. */
  onGather?: ((result: GatherResult) => void) | undefined;
  /** Sender of the flow's own webhooks (tests inject their own). */
  post?: PostJson | undefined;
  /** `TWILIO_AUTH_TOKEN`: TwiML nodes sign their webhook requests with it. */
  twilioAuthToken?: string | undefined;
  log: Logger;
}

export class CallFlow {
  readonly name: string;
  private readonly digits: DigitQueue;
  private readonly controller = new AbortController();

  constructor(private readonly options: CallFlowOptions) {
    this.name = options.name;
    this.digits = new DigitQueue(options.clock);
  }

  /** Where the flow wants every call event posted, if anywhere. */
  get webhook(): string | undefined {
    return this.options.flow.webhook;
  }

  /** Runs the flow in the background until it hangs up, loops, or `abort()`; a failure is logged. */
  start(): void {
    const { name, flow, call, onEvent, post, log } = this.options;
    const { clock } = this.options;
    const flowCall: FlowCall = {
      ...call,
      nextDigit: (timeoutMs, signal) => this.digits.next(timeoutMs, signal),
      wait: (ms, signal) => clock.sleepUntil(clock.now() + ms, signal),
    };
    runFlow(flow, flowCall, {
      name,
      signal: this.controller.signal,
      onEvent: (event) => {
        // What a TwiML webhook answered that cannot run is the app's to fix: said plainly, once.
        const error = event.type === 'flow.twiml' ? event.detail?.['error'] : undefined;
        if (error !== undefined)
          log.error(
            { flow: name, node: event.node, error },
            'TwiML failed (the node goes to its onError, else hangs up)',
          );
        onEvent(event);
      },
      post,
      twilioAuthToken: this.options.twilioAuthToken,
      grammars: this.options.grammars,
      onGather: this.options.onGather,
    }).catch((error: unknown) => log.error({ err: error, flow: name }, 'flow failed'));
  }

  /** A key the caller pressed, for the flow to read in order. */
  pushDigit(digit: string): void {
    this.digits.push(digit);
  }

  /** The call ended: the flow stops where it waits (a prompt, a key, a webhook). */
  abort(): void {
    this.controller.abort();
  }
}
