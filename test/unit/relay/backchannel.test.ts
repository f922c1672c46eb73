/** What counts as an acknowledgement (src/relay/backchannel.ts), and what rules one out early. */
import { describe, expect, it } from 'vitest';
import {
  backchannelPhrases,
  cannotBeBackchannel,
  DEFAULT_BACKCHANNELS,
  isBackchannel,
} from '../../../src/relay/backchannel.js';

const phrases = backchannelPhrases(DEFAULT_BACKCHANNELS);

describe('isBackchannel', () => {
  it.each([
    'Yeah.',
    'Uh-huh.',
    'uh huh',
    'Mm-hmm.',
    'Okay, yeah.',
    'Right.',
    'All right.',
    'Got it.',
    'Yeah, yeah, okay.',
    '',
  ])('"%s" is one', (text) => expect(isBackchannel(text, phrases)).toBe(true));

  it.each([
    'No.',
    'Wait.',
    'Yeah, but what about Sunday?',
    'Okay, stop.',
    'Sorry, can I ask something?',
    'yeah yeah yeah yeah yeah yeah yeah',
  ])('"%s" is not', (text) => expect(isBackchannel(text, phrases)).toBe(false));

  it('takes the list a relay sets', () => {
    const own = backchannelPhrases(['d’accord', 'oui']);
    expect(isBackchannel("Oui, d'accord.", own)).toBe(true);
    expect(isBackchannel('Yeah.', own)).toBe(false);
  });
});

describe('cannotBeBackchannel', () => {
  it('waits while the words so far may still be one (a word still growing)', () => {
    for (const partial of ['', 'ye', 'Yeah', 'Okay, ye', 'all', 'mm'])
      expect(cannotBeBackchannel(partial, phrases), partial).toBe(false);
  });

  it('rules one out once a word no acknowledgement has comes', () => {
    for (const partial of ['Sorry', 'Yeah, but', 'Can', 'okay so'])
      expect(cannotBeBackchannel(partial, phrases), partial).toBe(true);
  });
});
