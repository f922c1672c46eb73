/**
 * The gateways' machine-detection callbacks: Twilio's verdicts read (every `AnsweredBy` mapped, the
 * signature over the exact URL given), and the callbacks bounded in number and time.
 */
import { describe, expect, it } from 'vitest';
import { AmdCallbacks } from '../../../adapters/media-stream/amd-callbacks.js';
import { twilioAmdReader } from '../../../adapters/media-stream/amd-verdict.js';
import { twilioSignature } from '../../../src/protocols/twilio-signature.js';

const TOKEN = 'twilio-auth-token-unit-1a2b';
const URL_GIVEN = 'https://voice.example.com/call-amd/abc';
const reader = twilioAmdReader(TOKEN);

function read(
  fields: Record<string, string>,
  url = URL_GIVEN,
  signature = twilioSignature(TOKEN, url, fields),
) {
  return reader.read({
    url: URL_GIVEN,
    headers: { 'x-twilio-signature': signature },
    contentType: 'application/x-www-form-urlencoded; charset=utf-8',
    body: Buffer.from(new URLSearchParams(fields).toString()),
  });
}

describe('twilioAmdReader', () => {
  it.each([
    ['human', 'human'],
    ['machine_start', 'machine'],
    ['machine_end_beep', 'machine'],
    ['machine_end_silence', 'machine'],
    ['machine_end_other', 'machine'],
    ['fax', 'machine'],
    ['unknown', 'unknown'],
  ])('maps AnsweredBy %s to %s', (answeredBy, result) => {
    expect(read({ AnsweredBy: answeredBy, MachineDetectionDuration: '3120' })).toEqual({
      ok: true,
      verdict: { result, answeredBy, detectionMs: 3120, providerCallId: undefined },
    });
  });

  it('refuses a signature over another URL, a missing one, other values, and a body not form-encoded', () => {
    expect(read({ AnsweredBy: 'human' }, 'https://voice.example.com/call-amd/abd')).toMatchObject({
      status: 403,
    });
    expect(
      reader.read({
        url: URL_GIVEN,
        headers: {},
        contentType: 'application/x-www-form-urlencoded',
        body: Buffer.from('AnsweredBy=human'),
      }),
    ).toMatchObject({ status: 403 });
    expect(read({ AnsweredBy: 'Human' })).toMatchObject({ status: 400 });
    expect(read({})).toMatchObject({ status: 400 });
    expect(read({ AnsweredBy: 'human', MachineDetectionDuration: '1e3' })).toMatchObject({ status: 400 });
    expect(read({ AnsweredBy: 'human', CallSid: 'CA../../x' })).toMatchObject({ status: 400 });
    expect(read({ AnsweredBy: 'human', Long: 'x'.repeat(257) })).toMatchObject({ status: 400 });
    expect(
      reader.read({ url: URL_GIVEN, headers: {}, contentType: 'application/json', body: Buffer.from('{}') }),
    ).toMatchObject({ status: 415 });
  });
});

describe('AmdCallbacks', () => {
  it('opens unguessable URLs under the public URL, at most maxOpen, each for ttlMs', () => {
    let now = 0;
    const callbacks = new AmdCallbacks({
      publicUrl: 'https://voice.example.com/',
      readers: [reader],
      ttlMs: 1000,
      maxOpen: 2,
      now: () => now,
    });
    expect(callbacks.reads('twilio')).toBe(true);
    expect(callbacks.reads('telnyx')).toBe(false);
    expect(callbacks.open('telnyx', () => undefined)).toBeUndefined();
    const a = callbacks.open('twilio', () => undefined);
    const b = callbacks.open('twilio', () => undefined);
    expect(a?.url).toMatch(/^https:\/\/voice\.example\.com\/call-amd\/[A-Za-z0-9_-]{32}$/);
    expect(b?.id).not.toBe(a?.id);
    expect(callbacks.open('twilio', () => undefined)).toBeUndefined();
    callbacks.close(a!.id);
    expect(callbacks.size).toBe(1);
    now = 1000;
    expect(callbacks.size).toBe(0);
    expect(callbacks.open('twilio', () => undefined)).toBeDefined();
  });
});
