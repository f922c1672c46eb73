import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { KeyRing } from '../../../src/service/auth.js';
import { ConcurrencyLimiter } from '../../../src/service/limiter.js';

const req = (headers: Record<string, string>): IncomingMessage => ({ headers }) as unknown as IncomingMessage;

describe('KeyRing', () => {
  const ring = new KeyRing([
    { id: 'main', key: 'main-secret', scopes: ['speech', 'voices:read', 'voices:write'] },
    { id: 'ro', key: 'ro-secret', scopes: ['voices:read'] },
  ]);

  it('finds the principal and its scopes', () => {
    expect(ring.authenticate('ro-secret')?.id).toBe('ro');
    expect([...ring.authenticate('main-secret')!.scopes]).toEqual(['speech', 'voices:read', 'voices:write']);
    expect(ring.authenticate('ro-secre')).toBeUndefined();
    expect(ring.authenticate('')).toBeUndefined();
  });

  it('reads the primary header first, then xi-api-key', () => {
    expect(KeyRing.presentedKey(req({ 'serviceplatform-apikey': 'a', 'xi-api-key': 'b' }))).toBe('a');
    expect(KeyRing.presentedKey(req({ 'xi-api-key': 'b' }))).toBe('b');
    expect(KeyRing.presentedKey(req({}))).toBeUndefined();
  });

  it('refuses duplicate ids and empty keys', () => {
    expect(() => new KeyRing([{ id: 'a', key: '', scopes: ['speech'] }])).toThrow(/empty/);
    expect(
      () =>
        new KeyRing([
          { id: 'a', key: 'x', scopes: ['speech'] },
          { id: 'a', key: 'y', scopes: ['speech'] },
        ]),
    ).toThrow(/twice/);
  });
});

describe('ConcurrencyLimiter', () => {
  it('refuses past the limit per key and frees on release, once', () => {
    const limiter = new ConcurrencyLimiter(2);
    const a = limiter.tryAcquire('k')!;
    const b = limiter.tryAcquire('k')!;
    expect(limiter.tryAcquire('k')).toBeUndefined();
    expect(limiter.tryAcquire('other')).toBeDefined();
    a();
    a();
    expect(limiter.inFlight('k')).toBe(1);
    expect(limiter.tryAcquire('k')).toBeDefined();
    b();
  });
});
