/** A prompt's `lang` as ConversationRelay writes it, whatever the speech-to-text service says. */
import { describe, expect, it } from 'vitest';
import { promptLang } from '../../../src/relay/lang.js';

describe('promptLang', () => {
  it.each([
    // [detected by the STT, asked by the app (`language` message / TwiML), sent]
    ['en', undefined, 'en-US'],
    ['eng', undefined, 'en-US'],
    ['en', 'en-GB', 'en-GB'],
    ['eng', 'en-AU', 'en-AU'],
    ['es', 'en-US', 'es-ES'],
    ['spa', undefined, 'es-ES'],
    ['pt', 'en-US', 'pt-BR'],
    ['fr-CA', 'en-US', 'fr-CA'],
    [undefined, 'de-DE', 'de-DE'],
    [undefined, undefined, 'en-US'],
    ['', undefined, 'en-US'],
    ['not a language tag!', 'it-IT', 'it-IT'],
    ['en', 'garbage tag!', 'en-US'],
  ] as const)('%s, asked %s → %s', (detected, asked, sent) => {
    expect(promptLang(detected, asked)).toBe(sent);
  });
});
