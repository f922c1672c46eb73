import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { hostName, isLoopbackHost, WebGuard } from '../../../src/http/web-guard.js';

/** Only the headers and method matter to the guard. */
const req = (headers: Record<string, string>, method = 'GET'): IncomingMessage =>
  ({ headers, method }) as unknown as IncomingMessage;

describe('WebGuard', () => {
  const guard = new WebGuard({ allowedHosts: ['voice.example.com', '.corp.example'] });

  it('reads host names out of Host headers, IPv6 and trailing dots included', () => {
    expect(hostName('Example.COM:8080')).toBe('example.com');
    expect(hostName('[::1]:8080')).toBe('::1');
    expect(hostName('localhost.')).toBe('localhost');
    expect(isLoopbackHost('127.8.9.10')).toBe(true);
    expect(isLoopbackHost('x.localhost')).toBe(true);
    expect(isLoopbackHost('localhost.evil.example')).toBe(false);
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
  });

  it('answers loopback, IP literals and configured names; nothing else', () => {
    for (const host of [
      'localhost',
      '127.0.0.1:9',
      '[::1]',
      '192.0.2.1',
      'voice.example.com',
      'a.corp.example',
    ])
      expect(guard.hostAllowed(host), host).toBe(true);
    for (const host of [
      'evil.example',
      'voice.example.com.evil.example',
      'xcorp.example',
      'localhost.evil.example',
    ])
      expect(guard.hostAllowed(host), host).toBe(false);
    expect(new WebGuard({ allowedHosts: ['*'] }).hostAllowed('anything.example')).toBe(true);
  });

  it('lets safe methods through whatever the Origin, and refuses foreign ones on state changes', () => {
    const evil = { host: '127.0.0.1:8080', origin: 'https://evil.example' };
    expect(guard.checkRequest(req(evil, 'GET')).ok).toBe(true);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'])
      expect(guard.checkRequest(req(evil, method)).ok, method).toBe(false);
    expect(guard.checkRequest(req({ host: '127.0.0.1:8080', origin: 'null' }, 'POST')).ok).toBe(false);
    expect(guard.checkRequest(req({ host: '127.0.0.1:8080', origin: 'not a url' }, 'POST')).ok).toBe(false);
    // Same host and port, any scheme (a TLS proxy in front): our own page.
    expect(
      guard.checkRequest(req({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' }, 'POST')).ok,
    ).toBe(true);
    expect(
      guard.checkRequest(req({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:9090' }, 'POST')).ok,
    ).toBe(false);
    // No Origin: not a browser's cross-site request.
    expect(guard.checkRequest(req({ host: '127.0.0.1:8080' }, 'POST')).ok).toBe(true);
  });

  it('refuses a foreign Origin on an upgrade only when the stream did not authenticate', () => {
    const evil = req({ host: '127.0.0.1:8080', origin: 'https://evil.example' });
    expect(guard.checkUpgrade(evil, false).ok).toBe(false);
    expect(guard.checkUpgrade(evil, true).ok).toBe(true);
    expect(guard.checkUpgrade(req({ host: 'evil.example', origin: 'https://evil.example' }), true).ok).toBe(
      false,
    );
    expect(
      guard.checkUpgrade(req({ host: '127.0.0.1:8080', origin: 'https://voice.example.com' }), false).ok,
    ).toBe(true);
  });
});
