/**
 * Twilio's request signature (`X-Twilio-Signature`): HMAC-SHA1 keyed with the account's auth token
 * over the URL requested followed by the POST parameters sorted by name (none for a WebSocket),
 * base64. Checked on Twilio's media streams (adapters/media-stream/auth.ts) and made for the relay
 * apps' WebSocket handshakes (src/relay/session.ts) and webhook requests, as Twilio makes it.
 */
import { createHmac } from 'node:crypto';

export function twilioSignature(authToken: string, url: string, params: Record<string, string> = {}): string {
  const data = Object.keys(params)
    .sort()
    .reduce((acc, key) => acc + key + params[key], url);
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}
