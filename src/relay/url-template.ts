/**
 * A relay app's URL per call: `relays.<name>.url` may hold fields of the call, in braces, each put in
 * percent-encoded: `{callSid}`, `{from}`, `{to}`, `{direction}`, `{sessionId}`, and a custom parameter
 * of the call's as `{param.NAME}` (empty when the call has none by that name). So
 * `wss://app.example/relay/{callSid}?tenant={param.tenant}` opens a socket of its own per call, as
 * Twilio's `<ConversationRelay url>` written by a TwiML webhook would.
 */
import type { RelaySetup } from './host.js';

const FIELDS = ['callSid', 'from', 'to', 'direction', 'sessionId'] as const;
const PLACEHOLDER = /\{([^{}]*)\}/g;
const PARAM = /^param\.([A-Za-z0-9_.-]{1,64})$/;

/** The placeholders of `template` that are not fields of a call (none: the template is good). */
export function unknownFields(template: string): string[] {
  const unknown: string[] = [];
  for (const [, name = ''] of template.matchAll(PLACEHOLDER))
    if (!(FIELDS as readonly string[]).includes(name) && !PARAM.test(name)) unknown.push(name);
  return unknown;
}

/** `template` with the call's fields put in. */
export function relayUrl(template: string, setup: RelaySetup, sessionId: string): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const param = PARAM.exec(name);
    if (param) return encodeURIComponent(setup.customParameters[param[1]!] ?? '');
    switch (name) {
      case 'callSid':
        return encodeURIComponent(setup.callSid);
      case 'from':
        return encodeURIComponent(setup.from);
      case 'to':
        return encodeURIComponent(setup.to);
      case 'direction':
        return encodeURIComponent(setup.direction);
      case 'sessionId':
        return encodeURIComponent(sessionId);
      default:
        return whole;
    }
  });
}
