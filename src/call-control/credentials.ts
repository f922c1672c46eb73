/**
 * Each gateway's credentials, read from the environment: which variables it needs, and, when some are
 * missing, exactly which (the app answers 409 naming them). Every value read is also a secret the port
 * scrubs from its messages and logs, the account ids among them: they appear in request paths.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { CallControlError } from './errors.js';
import type { CallControlGateway } from './port.js';

export type Env = Readonly<Record<string, string | undefined>>;

/** The variables each gateway's port needs, all of them; `OPTIONAL` lists those only some operations need. */
export const CREDENTIAL_VARIABLES: Readonly<Record<CallControlGateway, readonly string[]>> = {
  twilio: ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN'],
  telnyx: ['TELNYX_API_KEY'],
  plivo: ['PLIVO_AUTH_ID', 'PLIVO_AUTH_TOKEN'],
  vonage: ['VONAGE_APPLICATION_ID', 'VONAGE_PRIVATE_KEY'],
  exotel: ['EXOTEL_ACCOUNT_SID', 'EXOTEL_API_KEY', 'EXOTEL_API_TOKEN'],
  asterisk: ['ASTERISK_ARI_USER', 'ASTERISK_ARI_PASSWORD'],
  jambonz: ['JAMBONZ_ACCOUNT_SID', 'JAMBONZ_API_KEY'],
};

/** Read when set; an operation that needs one and finds it unset is `missing_credentials` naming it. */
export const OPTIONAL_VARIABLES: Readonly<Partial<Record<CallControlGateway, readonly string[]>>> = {
  /** The Call Control application (connection) outbound calls are placed through. */
  telnyx: ['TELNYX_CONNECTION_ID'],
};

export interface Credentials {
  /** Every variable of the gateway that is set (required and optional), trimmed. */
  readonly values: Readonly<Record<string, string>>;
  /** Everything to scrub: each value, and derived forms (a Basic header's base64). */
  readonly secrets: readonly string[];
}

/** The gateway's credentials, or a `missing_credentials` error naming every unset variable. */
export function readCredentials(gateway: CallControlGateway, env: Env): Credentials | CallControlError {
  const required = CREDENTIAL_VARIABLES[gateway];
  const values: Record<string, string> = {};
  for (const name of [...required, ...(OPTIONAL_VARIABLES[gateway] ?? [])]) {
    const value = env[name]?.trim();
    if (value) values[name] = value;
  }
  const missing = required.filter((name) => values[name] === undefined);
  if (missing.length > 0)
    return new CallControlError({
      code: 'missing_credentials',
      gateway,
      operation: 'configure',
      message: `${gateway} call control needs ${missing.join(' and ')} to be set`,
      missing,
    });
  return { values, secrets: Object.values(values) };
}

/** `value` of a variable known to be set (checked by `readCredentials`). */
export function required(credentials: Credentials, name: string): string {
  const value = credentials.values[name];
  if (value === undefined) throw new Error(`call control: ${name} was not read`);
  return value;
}

/** An HTTP Basic `Authorization` value; its base64 joins the secrets (it is the password, encoded). */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/**
 * VONAGE_PRIVATE_KEY: the PEM itself (newlines may be written `\n`, as environment files often do) or
 * the path of a file holding it. `invalid_credentials` when neither gives a private key.
 */
export function vonagePrivateKey(value: string): KeyObject | CallControlError {
  const invalid = (why: string, cause?: unknown): CallControlError =>
    new CallControlError({
      code: 'invalid_credentials',
      gateway: 'vonage',
      operation: 'configure',
      message: `vonage call control: VONAGE_PRIVATE_KEY ${why}`,
      missing: ['VONAGE_PRIVATE_KEY'],
      cause,
    });
  let pem: string;
  if (value.includes('-----BEGIN')) pem = value.replace(/\\n/g, '\n');
  else {
    try {
      pem = readFileSync(value, 'utf8');
    } catch (error) {
      // The message names neither the path's contents nor the value beyond "a path".
      return invalid('is neither a PEM private key nor a readable file', {
        code: (error as { code?: unknown }).code,
      });
    }
  }
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== 'rsa')
      return invalid('is not an RSA private key (Vonage signs with RS256)');
    return key;
  } catch {
    return invalid('is not a PEM private key');
  }
}
