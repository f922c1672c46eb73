/**
 * The grammar of every gather that listens for speech: its branches' spoken forms, and the keys' names
 * when `spokenDigits` (by default where there are no spoken forms; maxDigits = the node's `digits`). Built once at start, where a word the
 * recogniser does not know stops the process with the flow, the node and the word named; calls then
 * find each node's grammar by name.
 */
import { GrammarError, menuGrammar, type MenuChoice, type MenuGrammar } from '../recognition/grammar.js';
import type { Flows, GatherNode } from './schema.js';

/** A gather's grammar could not be built: which flow and node, and why (the recogniser's `GrammarError`). */
export class FlowGrammarError extends Error {
  override readonly name = 'FlowGrammarError';
  constructor(
    readonly flow: string,
    readonly node: string,
    options: { cause: GrammarError },
  ) {
    super(`flows.${flow}.nodes.${node}.speech: ${options.cause.message}`, options);
  }
}

/** Whether a gather listens for the caller's voice. */
export function listensForSpeech(node: GatherNode): boolean {
  return node.input.includes('speech');
}

/** A gather's spoken choices: each branch key with its spoken forms, in the order the config gives them. */
export function gatherChoices(node: GatherNode): MenuChoice[] {
  return Object.entries(node.speech ?? {}).map(([key, phrases]) => ({ key, phrases }));
}

/** Whether a gather's keys may be said: as it says, else where it has no spoken forms. */
export function hearsSpokenDigits(node: GatherNode): boolean {
  return node.spokenDigits ?? node.speech === undefined;
}

/** A gather's grammar. Throws the recogniser's `GrammarError` for a word it does not know. */
export function gatherGrammar(node: GatherNode): MenuGrammar {
  return menuGrammar(gatherChoices(node), {
    carriers: node.carriers,
    maxDigits: hearsSpokenDigits(node) ? node.digits : 0,
  });
}

/** Every flow's grammars: flow name → node name → grammar, for the gathers that listen. */
export type FlowGrammars = ReadonlyMap<string, ReadonlyMap<string, MenuGrammar>>;

/**
 * The grammars of every gather that listens in `flows`. Throws `FlowGrammarError` (flow, node, and the
 * recogniser's error as its cause) at the first that cannot be built.
 */
export function buildFlowGrammars(flows: Flows): FlowGrammars {
  const out = new Map<string, Map<string, MenuGrammar>>();
  for (const [flowName, flow] of Object.entries(flows)) {
    const nodes = new Map<string, MenuGrammar>();
    for (const [nodeName, node] of Object.entries(flow.nodes)) {
      if (node.type !== 'gather' || !listensForSpeech(node)) continue;
      try {
        nodes.set(nodeName, gatherGrammar(node));
      } catch (error) {
        if (!(error instanceof GrammarError)) throw error;
        throw new FlowGrammarError(flowName, nodeName, { cause: error });
      }
    }
    if (nodes.size > 0) out.set(flowName, nodes);
  }
  return out;
}
