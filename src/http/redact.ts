/**
 * Scrubbing secrets from text a peer wrote before it goes into an error message or a log line:
 * servers have been known to echo a bad key back, and an error body may quote the request. One
 * primitive for every client that holds credentials (the speech clients, the gateways' REST APIs).
 */

/** Every occurrence of each secret (of 4 characters or more: shorter ones would scrub ordinary words) replaced. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}
