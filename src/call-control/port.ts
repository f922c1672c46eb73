/**
 * The call-control port: what voxbridge can do to a call itself, not to its media stream. A media
 * stream only carries audio; the call it belongs to lives at the gateway, which alone can end it for
 * real, send the caller elsewhere, or place a new call. Each gateway does that through its own REST API
 * (one module per gateway in this folder); this interface is what the rest of voxbridge sees.
 *
 * A call is addressed by the id the gateway's start message gave the stream (`StreamInfo.callId`,
 * with `accountSid` where the gateway says whose call it is): `CallRef` is the part of a stream's
 * description the port needs, so a stream can be passed as it is. Which id that is, gateway by gateway,
 * is said in each module and in docs/gateways.md ("Call control").
 */

/** The gateways with a call-control module: the same names as the media-stream protocols'. */
export const CALL_CONTROL_GATEWAYS = [
  'twilio',
  'telnyx',
  'plivo',
  'vonage',
  'exotel',
  'asterisk',
  'jambonz',
] as const;

export type CallControlGateway = (typeof CALL_CONTROL_GATEWAYS)[number];

/** The call to act on. */
export interface CallRef {
  /**
   * The gateway's id of the call, as the stream's start message gave it: Twilio `callSid`, Telnyx
   * `call_control_id`, Plivo `callId` (the CallUUID), Vonage the call's `uuid` (from the NCCO's
   * headers), Exotel `call_sid`, Asterisk the channel id, jambonz `callSid`.
   */
  readonly callId: string;
  /**
   * Twilio: the account the call belongs to (the start message's `accountSid`), when it is a
   * subaccount of the one whose credentials are set; else the credentials' own account.
   */
  readonly accountSid?: string;
}

/** Whom a transfer or an outbound call reaches. */
export type CallTarget =
  /** A phone number in E.164 form (`+15551234567`). */
  | { readonly kind: 'number'; readonly number: string }
  /** A SIP URI (`sip:alice@example.com`, `sips:…`). */
  | { readonly kind: 'sip'; readonly uri: string };

/** What the person reached in a warm transfer hears before the caller is put through. */
export type TransferSummary =
  /** Spoken by the gateway's own text-to-speech (Twilio `<Say>`, Plivo `<Speak>`, Vonage `talk`, jambonz `say`). */
  | { readonly text: string }
  /** An audio file (WAV or MP3) at an http(s) URL the gateway fetches. */
  | { readonly audioUrl: string };

export interface TransferOptions {
  /**
   * `cold`: the caller is connected to the target and voxbridge drops out at once. `warm`: the caller
   * waits (hold music where the gateway can play it, else ringback) while the target is called; the
   * person who answers hears `summary` first and is then connected to the caller.
   */
  readonly mode: 'cold' | 'warm';
  /** The caller id the target sees (E.164). Default: the gateway's (usually the caller's number). */
  readonly callerId?: string;
  /** How long the target may ring, in seconds. Default 30. */
  readonly timeoutSeconds?: number;
  /** Warm only: what the target hears before being connected. */
  readonly summary?: TransferSummary;
  /** Warm only: an audio file (WAV or MP3) the caller hears while waiting, where the gateway can. */
  readonly holdMusicUrl?: string;
  readonly signal?: AbortSignal;
}

export interface TransferResult {
  readonly mode: 'cold' | 'warm';
  /**
   * The new call placed to the target, where the gateway gives its id at once (Twilio's warm transfer
   * places it with the Calls API); else undefined (the gateway dials the target itself).
   */
  readonly targetCallId?: string;
}

/** The gateway's own answering-machine detection on an outbound call. */
export interface GatewayMachineDetection {
  /**
   * `detect`: tell a person from a machine as soon as it can. `detect-message-end`: for a machine, also
   * wait for the end of its greeting (its beep), so a message can be left.
   */
  readonly mode: 'detect' | 'detect-message-end';
  /**
   * Where the gateway posts its verdict while the call goes on (Twilio `AsyncAmdStatusCallback`, Plivo
   * `machine_detection_url`, Telnyx `webhook_url`, Vonage `event_url`, jambonz `amd.actionHook`).
   * Required: the stream starts at once and the verdict comes later.
   */
  readonly callbackUrl: string;
  /** How long the gateway may listen before deciding, in seconds, where it takes a bound. */
  readonly timeoutSeconds?: number;
}

export interface OriginateRequest {
  readonly to: CallTarget;
  /** The caller id: a number the account owns (E.164), or the gateway's own form (a SIP URI, Asterisk). */
  readonly from: string;
  /**
   * The `wss://…/media/<gateway>` URL the answered call's media stream is opened to, with its token
   * where the deployment requires one (for Twilio in the path: its stream URLs may not carry a query).
   */
  readonly streamUrl: string;
  /**
   * Handed to the stream's start message as the call's parameters (Twilio `<Parameter>`, Telnyx and
   * jambonz and Asterisk in the stream URL's query or metadata, Plivo `extraHeaders`, Vonage headers).
   * The app should put its own id of the call here: not every gateway's start message carries the id
   * `originate` answers with (see `OriginateResult`).
   */
  readonly parameters?: Readonly<Record<string, string>>;
  /** How long the callee may ring, in seconds. Default 30. */
  readonly timeoutSeconds?: number;
  /** Where the gateway posts the call's progress (ringing, answered, completed, failed), where it can. */
  readonly statusCallbackUrl?: string;
  readonly machineDetection?: GatewayMachineDetection;
  readonly signal?: AbortSignal;
}

export interface OriginateResult {
  /**
   * The gateway's id of the new call, where it answers with one that later addresses the call (and
   * that `hangUp` takes): Twilio `sid`, Telnyx `call_control_id`, Vonage `uuid`, jambonz `sid`,
   * Asterisk the channel id, Exotel `Sid`. Plivo answers with a request id only (`requestId`): its
   * CallUUID is first known to the answer URL and the stream's start message.
   */
  readonly callId?: string;
  /** The id of the request itself where the gateway gives one (Plivo `request_uuid`). */
  readonly requestId?: string;
}

export interface HangUpResult {
  /** The gateway said the call was already over (or unknown to it): nothing was left to end. */
  readonly alreadyEnded: boolean;
}

/** What one gateway's port can do, as configured (some need a `DocumentHost` or a setting). */
export interface CallControlCapabilities {
  readonly hangUp: boolean;
  readonly coldTransfer: boolean;
  readonly warmTransfer: boolean;
  /** Warm transfer: the caller hears `holdMusicUrl` while waiting (else ringback). */
  readonly holdMusic: boolean;
  /** Warm transfer: the forms of summary the gateway can give the target. */
  readonly summary: ReadonlyArray<'text' | 'audio'>;
  /** Transfer to a SIP URI as well as to a number. */
  readonly sipTargets: boolean;
  readonly originate: boolean;
  /** `OriginateRequest.machineDetection`: the gateway's own answering-machine detection. */
  readonly machineDetection: boolean;
}

export interface CallControl {
  readonly gateway: CallControlGateway;
  readonly capabilities: CallControlCapabilities;
  /** Ends the call at the gateway (both legs where it is bridged), not only voxbridge's stream. */
  hangUp(call: CallRef, options?: { readonly signal?: AbortSignal }): Promise<HangUpResult>;
  /** Sends the caller to `target`; the media stream to voxbridge ends as the gateway moves the call. */
  transfer(call: CallRef, target: CallTarget, options: TransferOptions): Promise<TransferResult>;
  /** Places a call to `request.to` whose media stream, once answered, comes to `request.streamUrl`. */
  originate(request: OriginateRequest): Promise<OriginateResult>;
  /** Closes the port's connections once running requests finish. */
  close(): Promise<void>;
}
