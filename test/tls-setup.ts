/**
 * vitest globalSetup: a self-signed certificate for localhost, trusted by every test worker.
 *
 * `@discordjs/voice` opens `wss://<endpoint>` with no TLS options, so the fake Discord voice server's
 * certificate must be trusted process-wide: Node reads NODE_EXTRA_CA_CERTS when a process starts, and
 * the `forks` pool starts its workers after this runs, with this process's environment.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCertificate } from '../testkit/discord/tls.js';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'voxbridge-tls-'));
  const { cert, key, bundle } = makeTestCertificate(dir);
  process.env['NODE_EXTRA_CA_CERTS'] = bundle;
  process.env['VOXBRIDGE_TEST_TLS_CERT'] = cert;
  process.env['VOXBRIDGE_TEST_TLS_KEY'] = key;
  return () => rmSync(dir, { recursive: true, force: true });
}
