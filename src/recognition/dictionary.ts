/**
 * The words the model can say: those of its pronunciation dictionary (CMUdict, 134 k entries), read
 * once on first use. A grammar (or a text to align) holding another word cannot be decoded, so it is
 * checked here, on the main thread, where a config error can still name the word.
 */
import { readFileSync } from 'node:fs';
import { DICTIONARY_PATH } from './model.js';

let words: ReadonlySet<string> | undefined;

function load(): ReadonlySet<string> {
  const set = new Set<string>();
  for (const line of readFileSync(DICTIONARY_PATH, 'utf8').split('\n')) {
    if (line.startsWith(';;')) continue;
    const space = line.indexOf(' ');
    if (space <= 0) continue;
    const word = line.slice(0, space);
    // `<s>`, `</s>`, `<sil>`: the decoder's own; `read(2)`: an alternate pronunciation of `read`.
    if (word.startsWith('<')) continue;
    set.add(word.replace(/\(\d+\)$/, ''));
  }
  return set;
}

/** Whether the model can say `word` (lower case, as the dictionary spells it). */
export function inDictionary(word: string): boolean {
  words ??= load();
  return words.has(word);
}
