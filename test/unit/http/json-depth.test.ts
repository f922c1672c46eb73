import { describe, expect, it } from 'vitest';
import { jsonDepthExceeds } from '../../../src/http/json-depth.js';

const nested = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

describe('jsonDepthExceeds', () => {
  it('counts objects and arrays inside one another, not side by side', () => {
    expect(jsonDepthExceeds(nested(3), 3)).toBe(false);
    expect(jsonDepthExceeds(nested(4), 3)).toBe(true);
    expect(jsonDepthExceeds('[[1],[2],[3],{"a":[4]}]', 3)).toBe(false);
    expect(jsonDepthExceeds('[[[[1]]]]', 3)).toBe(true);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonDepthExceeds(JSON.stringify({ s: '[[[[{{{{' }), 1)).toBe(false);
    expect(jsonDepthExceeds(JSON.stringify({ s: 'say \\"[[[[" then {{{{' }), 1)).toBe(false);
    expect(jsonDepthExceeds(`{"s":"\\\\","t":[[[1]]]}`, 3)).toBe(true);
  });

  it('finds 5000 levels in a message a relay app may send (about 30 KB)', () => {
    const deep = `{"type":"end","handoffData":${nested(5000)}}`;
    expect(deep.length).toBeLessThan(64 * 1024);
    expect(jsonDepthExceeds(deep)).toBe(true);
  });
});
