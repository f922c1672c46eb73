/**
 * Credentials for the fake gateways, made afresh for each test run: nothing shaped like a secret is
 * written in the repository, and a value can only reach a log or an answer by a leak the tests look
 * for. Each has the shape its vendor's has (a Twilio account SID is `AC` and 32 hex digits), so the
 * ports' checks of that shape hold.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { fakeSecret } from '../secrets.js';

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** A Twilio account (or subaccount) SID: `AC` and 32 hex digits. */
export function fakeTwilioAccountSid(): string {
  return `AC${hex(16)}`;
}

/** Every gateway's credentials (but Vonage's private key, which a test generates as a key pair). */
export function fakeGatewayCredentials(): {
  TWILIO_ACCOUNT_SID: string;
  TWILIO_AUTH_TOKEN: string;
  TELNYX_API_KEY: string;
  TELNYX_CONNECTION_ID: string;
  PLIVO_AUTH_ID: string;
  PLIVO_AUTH_TOKEN: string;
  VONAGE_APPLICATION_ID: string;
  JAMBONZ_ACCOUNT_SID: string;
  JAMBONZ_API_KEY: string;
  ASTERISK_ARI_USER: string;
  ASTERISK_ARI_PASSWORD: string;
  EXOTEL_ACCOUNT_SID: string;
  EXOTEL_API_KEY: string;
  EXOTEL_API_TOKEN: string;
} {
  return {
    TWILIO_ACCOUNT_SID: fakeTwilioAccountSid(),
    TWILIO_AUTH_TOKEN: fakeSecret('twilio-token'),
    TELNYX_API_KEY: fakeSecret('telnyx-key'),
    TELNYX_CONNECTION_ID: String(1_000_000_000 + randomBytes(4).readUInt32BE(0)),
    PLIVO_AUTH_ID: `MA${hex(9).toUpperCase()}`,
    PLIVO_AUTH_TOKEN: fakeSecret('plivo-token'),
    VONAGE_APPLICATION_ID: randomUUID(),
    JAMBONZ_ACCOUNT_SID: randomUUID(),
    JAMBONZ_API_KEY: fakeSecret('jambonz-key'),
    ASTERISK_ARI_USER: 'voxbridge-ari',
    ASTERISK_ARI_PASSWORD: fakeSecret('ari-password'),
    EXOTEL_ACCOUNT_SID: `exotel${hex(4)}`,
    EXOTEL_API_KEY: fakeSecret('exotel-key'),
    EXOTEL_API_TOKEN: fakeSecret('exotel-token'),
  };
}
