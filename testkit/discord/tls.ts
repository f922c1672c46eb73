/**
 * A self-signed certificate for localhost (openssl), and a CA bundle that adds it to what the process
 * already trusts through NODE_EXTRA_CA_CERTS. Node reads that variable when a process starts, so the
 * bundle is for processes started afterwards (vitest's workers, a benchmark's child). `testTls` is the
 * certificate a test worker is given (made by test/tls-setup.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificate {
  cert: string;
  key: string;
  /** NODE_EXTRA_CA_CERTS for processes that must trust `cert`. */
  bundle: string;
}

export function makeTestCertificate(dir: string): TestCertificate {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=localhost'],
      ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
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
  return { cert, key, bundle };
}

/** The test certificate made by test/tls-setup.ts. */
export function testTls(): { cert: string; key: string } {
  const cert = process.env['VOXBRIDGE_TEST_TLS_CERT'];
  const key = process.env['VOXBRIDGE_TEST_TLS_KEY'];
  if (!cert || !key) throw new Error('no test certificate: run under vitest (test/tls-setup.ts)');
  return { cert: readPem(cert), key: readPem(key) };
}

function readPem(path: string): string {
  return readFileSync(path, 'utf8');
}
