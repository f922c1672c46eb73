/**
 * The JSON Web Token the Vonage Voice API takes as its bearer credential: RS256 over
 * `{application_id, iat, jti, exp}`, signed with the application's private key (node:crypto; no JWT
 * library). Vonage's own SDK signs the same claims with a 15-minute lifetime; a fresh token is made for
 * every request here, so none is kept where it could leak.
 */
import { randomUUID, sign, type KeyObject } from 'node:crypto';

/** How long a token is valid: Vonage's SDK default. */
export const VONAGE_JWT_TTL_SECONDS = 15 * 60;

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

/** A signed token for `applicationId`, issued at `nowMs` (Unix ms). */
export function vonageJwt(applicationId: string, key: KeyObject, nowMs: number): string {
  const iat = Math.floor(nowMs / 1000);
  const header = base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const claims = base64url(
    JSON.stringify({
      application_id: applicationId,
      iat,
      jti: randomUUID(),
      exp: iat + VONAGE_JWT_TTL_SECONDS,
    }),
  );
  const signature = sign('sha256', Buffer.from(`${header}.${claims}`), key);
  return `${header}.${claims}.${base64url(signature)}`;
}
