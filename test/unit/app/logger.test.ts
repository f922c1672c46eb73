/** The app's logger keeps secrets out of every line, by the keys that hold them. */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/app/logger.js';

describe('createLogger', () => {
  it('redacts the gateways’ call-control credentials wherever a record holds them by name', () => {
    let out = '';
    const stream = new PassThrough();
    stream.on('data', (d: Buffer) => (out += d.toString()));
    const logger = createLogger('trace', stream);
    logger.trace(
      { TWILIO_AUTH_TOKEN: 'tw-secret-1', env: { TELNYX_API_KEY: 'tx-secret-2', PLIVO_AUTH_ID: 'pl-id-3' } },
      'credentials by name',
    );
    expect(out).toContain('credentials by name');
    for (const secret of ['tw-secret-1', 'tx-secret-2', 'pl-id-3']) expect(out).not.toContain(secret);
    expect(out.match(/\[redacted\]/g)).toHaveLength(3);
  });
});
