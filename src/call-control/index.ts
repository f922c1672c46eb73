/**
 * Call control: hanging up, transferring and placing calls through each phone gateway's own REST
 * API (see port.ts, and docs/gateways.md "Call control" for what each gateway can do and why).
 */
export {
  CALL_CONTROL_GATEWAYS,
  type CallControl,
  type CallControlCapabilities,
  type CallControlGateway,
  type CallRef,
  type CallTarget,
  type GatewayMachineDetection,
  type HangUpResult,
  type OriginateRequest,
  type OriginateResult,
  type TransferOptions,
  type TransferResult,
  type TransferSummary,
} from './port.js';
export { CallControlError, type CallControlErrorCode } from './errors.js';
export { callControlFor, type CallControlAvailability, type CallControlFactoryOptions } from './factory.js';
export { CREDENTIAL_VARIABLES, OPTIONAL_VARIABLES, type Env } from './credentials.js';
export type { DocumentHost, HostedDocument } from './documents.js';
export type {
  AsteriskSettings,
  CallControlSettings,
  ExotelSettings,
  JambonzSettings,
  PlivoSettings,
  TelnyxSettings,
  VonageSettings,
} from './settings.js';
export { parseCallTarget } from './targets.js';
export { DEFAULT_MAX_ANSWER_BYTES, DEFAULT_REQUEST_TIMEOUT_MS } from './rest.js';
export { TWILIO_API_BASE_URL } from './twilio.js';
export { TELNYX_API_BASE_URL } from './telnyx.js';
export { PLIVO_API_BASE_URL } from './plivo.js';
export { VONAGE_API_BASE_URL } from './vonage.js';
export { JAMBONZ_API_BASE_URL } from './jambonz.js';
export { ASTERISK_API_BASE_URL } from './asterisk.js';
export { EXOTEL_API_BASE_URL } from './exotel.js';
