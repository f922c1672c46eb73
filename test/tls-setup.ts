/**
 * vitest globalSetup: a self-signed certificate for localhost, trusted by every test worker.
 *
 * `@discordjs/voice` opens `wss://<endpoint>` with no TLS options, so the fake Discord voice server's
 * certificate must be trusted process-wide: Node reads NODE_EXTRA_CA_CERTS when a process starts, and
 * the `forks` pool starts its workers after this runs, with this process's environment.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'voxbridge-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  // Keep whatever the machine already trusts this way, and add ours.
  let existing = '';
  const previous = process.env['NODE_EXTRA_CA_CERTS'];
  if (previous) {
    try {
      existing = readFileSync(previous, 'utf8');
    } catch {
      existing = '';
    }
  }
  const bundle = join(dir, 'bundle.pem');
  writeFileSync(bundle, `${existing}\n${readFileSync(cert, 'utf8')}`);
  process.env['NODE_EXTRA_CA_CERTS'] = bundle;
  process.env['VOXBRIDGE_TEST_TLS_CERT'] = cert;
  process.env['VOXBRIDGE_TEST_TLS_KEY'] = key;
  return () => rmSync(dir, { recursive: true, force: true });
}
