/**
 * A gateway's call-control port from the environment and the settings, or the reason there is none:
 * `missing_credentials` naming exactly the variables to set (the app answers 409 with it), or
 * `invalid_credentials` for a Vonage key that cannot be read. Nothing is sent to the gateway here.
 */
import { AsteriskCallControl } from './asterisk.js';
import { readCredentials, required, vonagePrivateKey, type Env } from './credentials.js';
import { CallControlError } from './errors.js';
import { ExotelCallControl } from './exotel.js';
import { JambonzCallControl } from './jambonz.js';
import { PlivoCallControl } from './plivo.js';
import type { CallControl, CallControlGateway } from './port.js';
import type { CallControlSettings } from './settings.js';
import { TelnyxCallControl } from './telnyx.js';
import { TwilioCallControl } from './twilio.js';
import { VonageCallControl, type VonageOptions } from './vonage.js';

export type CallControlAvailability =
  | { readonly ok: true; readonly control: CallControl }
  | { readonly ok: false; readonly error: CallControlError };

export interface CallControlFactoryOptions {
  /** Vonage: the clock of the JWT's `iat` (Unix ms). */
  readonly now?: VonageOptions['now'];
}

/** The port of `gateway` with credentials from `env`, or why it cannot be made. */
export function callControlFor(
  gateway: CallControlGateway,
  env: Env,
  settings: CallControlSettings = {},
  options: CallControlFactoryOptions = {},
): CallControlAvailability {
  const credentials = readCredentials(gateway, env);
  if (credentials instanceof CallControlError) return { ok: false, error: credentials };
  switch (gateway) {
    case 'twilio':
      return { ok: true, control: new TwilioCallControl(credentials, settings) };
    case 'telnyx':
      return { ok: true, control: new TelnyxCallControl(credentials, settings) };
    case 'plivo':
      return { ok: true, control: new PlivoCallControl(credentials, settings) };
    case 'vonage': {
      const key = vonagePrivateKey(required(credentials, 'VONAGE_PRIVATE_KEY'));
      if (key instanceof CallControlError) return { ok: false, error: key };
      const vonage = options.now === undefined ? {} : { now: options.now };
      return { ok: true, control: new VonageCallControl(credentials, key, settings, vonage) };
    }
    case 'jambonz':
      return { ok: true, control: new JambonzCallControl(credentials, settings) };
    case 'asterisk':
      return { ok: true, control: new AsteriskCallControl(credentials, settings) };
    case 'exotel':
      return { ok: true, control: new ExotelCallControl(credentials, settings) };
  }
}
