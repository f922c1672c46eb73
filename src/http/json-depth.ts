/**
 * How deep a peer's JSON nests, found before it is parsed. `JSON.parse` copes with deep nesting, but
 * what walks the result afterwards (`JSON.stringify`, a schema, a logger) recurses and overflows the
 * stack on a few thousand levels that fit in a small message: a `RangeError` that is no parse error
 * and, uncaught, ends the process. A peer's JSON deeper than its format needs is refused unread.
 */

/** Deeper than any message a peer of ours sends: ConversationRelay's, a webhook's, a speech service's. */
export const MAX_JSON_DEPTH = 64;

/** Whether `text` (JSON or not) opens more than `maxDepth` objects or arrays inside one another. */
export function jsonDepthExceeds(text: string, maxDepth = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}
