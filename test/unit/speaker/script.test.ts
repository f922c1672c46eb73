import { describe, expect, it } from 'vitest';
import { parseScript, ScriptError, type Cast } from '../../../src/speaker/script.js';

const CAST: Cast = {
  Narrator: { voiceId: 'v-narrator' },
  Goblin: { voiceId: 'v-goblin', voiceSettings: { stability: 0.2 } },
  'Old Mage': { voiceId: 'v-mage' },
};

describe('parseScript', () => {
  it("splits a script into each character's lines, with their voices", () => {
    const lines = parseScript(
      '[Goblin] You shall not pass! [Narrator] The goblin raises its spear. [old mage] Stand aside.',
      CAST,
      'Narrator',
    );
    expect(lines).toEqual([
      {
        character: 'Goblin',
        voiceId: 'v-goblin',
        voiceSettings: { stability: 0.2 },
        text: 'You shall not pass!',
      },
      { character: 'Narrator', voiceId: 'v-narrator', text: 'The goblin raises its spear.' },
      { character: 'Old Mage', voiceId: 'v-mage', text: 'Stand aside.' },
    ]);
  });

  it('gives untagged text to the default character and joins consecutive lines of one character', () => {
    const lines = parseScript(
      'Night falls.\n\n[Narrator]   The wind rises. [Goblin] Hm. [GOBLIN] Who goes there?',
      CAST,
      'narrator',
    );
    expect(lines.map((l) => [l.character, l.text])).toEqual([
      ['Narrator', 'Night falls. The wind rises.'],
      ['Goblin', 'Hm. Who goes there?'],
    ]);
  });

  it('keeps brackets that cannot be a name as text, and skips empty turns', () => {
    const lines = parseScript('[Narrator] [Goblin] It read [sic, 1923] on the sign.', CAST, 'Narrator');
    expect(lines).toEqual([
      {
        character: 'Goblin',
        voiceId: 'v-goblin',
        voiceSettings: { stability: 0.2 },
        text: 'It read [sic, 1923] on the sign.',
      },
    ]);
  });

  it('refuses an unknown character, naming it and the cast', () => {
    expect(() => parseScript('[Narrator] Hello. [Gobin] Grr.', CAST, 'Narrator')).toThrow(ScriptError);
    expect(() => parseScript('[Narrator] Hello. [Gobin] Grr.', CAST, 'Narrator')).toThrow(
      /unknown character "Gobin" at position 18; the cast is: Narrator, Goblin, Old Mage/,
    );
  });

  it('refuses an empty script and a default character outside the cast', () => {
    expect(() => parseScript('  [Goblin]  ', CAST, 'Narrator')).toThrow(/nothing to say/);
    expect(() => parseScript('Hello.', CAST, 'Bard')).toThrow(/default character "Bard"/);
  });
});
