/**
 * Scripts with several characters, for narration: `[Goblin] You shall not pass! [Narrator] The goblin
 * raises its spear.` Each `[Name]` switches to that character of the cast, with its own voice; text
 * before the first tag is the default character's. Brackets that do not name a cast member stay text
 * only if they cannot be a name (`[sic, 1923]`); a name-like tag that is not in the cast is an error,
 * so a typo never silently reads in the wrong voice.
 */
import type { SpeechVoiceSettings } from '../speech/client.js';

export interface CastMember {
  voiceId: string;
  voiceSettings?: SpeechVoiceSettings;
}

/** Character name → voice. Names match case-insensitively. */
export type Cast = Readonly<Record<string, CastMember>>;

export interface ScriptLine {
  /** The character as the cast spells it. */
  character: string;
  voiceId: string;
  voiceSettings?: SpeechVoiceSettings;
  text: string;
}

export class ScriptError extends Error {
  override readonly name = 'ScriptError';
}

/** A tag: a name of letters, digits, spaces, apostrophes, dots and hyphens, at most 40 characters. */
const TAG = /\[([\p{L}\p{N}][\p{L}\p{N} .'’-]{0,39})\]/gu;

function lookup(cast: Cast): Map<string, string> {
  const byKey = new Map<string, string>();
  for (const name of Object.keys(cast)) byKey.set(name.trim().toLowerCase(), name);
  return byKey;
}

/**
 * Splits `script` into lines per character, in order; consecutive lines of one character are joined.
 * Throws `ScriptError` naming an unknown character (and the cast), or when nothing is left to say.
 */
export function parseScript(script: string, cast: Cast, defaultCharacter: string): ScriptLine[] {
  const names = lookup(cast);
  const resolve = (raw: string): string | undefined => names.get(raw.trim().toLowerCase());
  const fallback = resolve(defaultCharacter);
  if (fallback === undefined)
    throw new ScriptError(`the default character "${defaultCharacter}" is not in the cast`);
  const lines: ScriptLine[] = [];
  let character = fallback;
  let from = 0;
  const push = (text: string): void => {
    const clean = text.replace(/\s+/g, ' ').trim();
    if (clean === '') return;
    const last = lines.at(-1);
    if (last && last.character === character) {
      last.text = `${last.text} ${clean}`;
      return;
    }
    const member = cast[character]!;
    lines.push({
      character,
      voiceId: member.voiceId,
      ...(member.voiceSettings ? { voiceSettings: member.voiceSettings } : {}),
      text: clean,
    });
  };
  for (const match of script.matchAll(TAG)) {
    const name = resolve(match[1]!);
    if (name === undefined) {
      throw new ScriptError(
        `unknown character "${match[1]!}" at position ${match.index}; the cast is: ${Object.keys(cast).join(', ')}`,
      );
    }
    push(script.slice(from, match.index));
    character = name;
    from = match.index + match[0].length;
  }
  push(script.slice(from));
  if (lines.length === 0) throw new ScriptError('the script has nothing to say');
  return lines;
}
