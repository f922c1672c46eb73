/**
 * docs/configuration.md is what the generator makes from the schema and default.yaml today: a key
 * added to the schema without regenerating the reference (`npm run docs:config`) fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfigReference } from '../../../src/app/config-reference.js';
import { PROJECT_ROOT } from '../../../src/paths.js';

const yamlText = readFileSync(join(PROJECT_ROOT, 'config', 'default.yaml'), 'utf8');

describe('the configuration reference', () => {
  it('is up to date with the schema and default.yaml', () => {
    const committed = readFileSync(join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
    expect(committed).toBe(renderConfigReference(yamlText));
  });

  it('lists nested keys with their limits, defaults and comments', () => {
    const doc = renderConfigReference(yamlText);
    expect(doc).toContain('| `server.port` | integer 0–65535 | `8080` |');
    expect(doc).toMatch(/\| `discord\.bargeIn\.minSpeechMs` \| integer 20–5000 \| `200` \|/);
    expect(doc).toMatch(/\| `calls\.leadMs` \| integer 20–2000 \| `200` \| Audio sent ahead of real time/);
    // A key the YAML does not set still appears, from the schema.
    const withoutPort = yamlText.replace(/^ {2}port: 8080\n/m, '');
    expect(renderConfigReference(withoutPort)).toMatch(/\| `server\.port` \| integer 0–65535 \| {2}\|/);
  });
});
