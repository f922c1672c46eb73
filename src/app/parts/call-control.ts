/**
 * The call-control part: one port per gateway the calls serve (`calls.gateways`), made at start from
 * the environment's credentials and `calls.control.*` (nothing is sent to a gateway here), the
 * document host for the gateways that fetch their instructions (under `server.publicUrl`), and the
 * route it serves them on. A gateway without credentials has no port, only the error that names what
 * to set: its calls hang up by closing the stream, and what needs the port is answered 409.
 */
import type { Logger } from 'pino';
import type { CallControls } from '../../../adapters/media-stream/call-control-link.js';
import {
  callControlFor,
  CallControlError,
  type CallControlAvailability,
  type CallControlGateway,
  type CallControlSettings,
} from '../../call-control/index.js';
import type { Route } from '../../http/router.js';
import type { GatewayName } from '../../protocols/types.js';
import type { Config, LoadedConfig } from '../config.js';
import { PublishedDocuments } from '../document-host.js';

export interface CallControlPart {
  readonly controls: CallControls;
  /** Serves published documents; undefined without `server.publicUrl`. */
  readonly documents: PublishedDocuments | undefined;
  readonly routes: readonly Route[];
  close(): Promise<void>;
}

type ControlConfig = Config['calls']['control'];
type Formats = Config['calls']['formats'];

/** Telnyx's `stream_bidirectional_codec` for the codec calls.formats plays to Telnyx. */
function telnyxCodec(formats: Formats): 'PCMU' | 'PCMA' | 'L16' {
  const encoding = formats.telnyx?.encoding ?? 'mulaw';
  return encoding === 'alaw' ? 'PCMA' : encoding === 's16le' ? 'L16' : 'PCMU';
}

/** Plivo's `<Stream contentType>` (both ways) for calls.formats.plivo; default μ-law at 8 kHz. */
function plivoContentType(formats: Formats): string {
  const f = formats.plivo;
  if (f?.encoding === 's16le') return `audio/x-l16;rate=${f.sampleRate}`;
  return 'audio/x-mulaw;rate=8000';
}

/** Each gateway's port settings from `calls.control` and the formats the calls play. */
export function callControlSettings(
  gateway: CallControlGateway,
  control: ControlConfig,
  formats: Formats,
): CallControlSettings {
  const common = {
    ...(control[gateway].apiBaseUrl === null ? {} : { apiBaseUrl: control[gateway].apiBaseUrl }),
    requestTimeoutMs: control.requestTimeoutMs,
    maxAnswerBytes: control.maxAnswerBytes,
  };
  const defined = <T extends Record<string, unknown>>(o: T): Partial<{ [K in keyof T]: NonNullable<T[K]> }> =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<{
      [K in keyof T]: NonNullable<T[K]>;
    }>;
  switch (gateway) {
    case 'telnyx':
      return { ...common, telnyx: { streamCodec: telnyxCodec(formats) } };
    case 'plivo':
      return { ...common, plivo: { streamContentType: plivoContentType(formats) } };
    case 'vonage':
      return { ...common, vonage: { streamContentType: control.vonage.streamContentType } };
    case 'jambonz': {
      const { apiBaseUrl: _url, ...speech } = control.jambonz;
      return {
        ...common,
        jambonz: {
          ...(formats.jambonz ? { streamSampleRate: formats.jambonz.sampleRate } : {}),
          speech: defined(speech),
        },
      };
    }
    case 'asterisk': {
      const a = control.asterisk;
      return {
        ...common,
        asterisk: {
          ...defined({
            transferContext: a.transferContext,
            originateContext: a.originateContext,
          }),
          redirectTemplate: a.redirectTemplate,
          originateExtension: a.originateExtension,
          dialTemplates: defined({ number: a.dialNumber, sip: a.dialSip }),
        },
      };
    }
    case 'exotel':
      return { ...common, exotel: defined({ flowAppId: control.exotel.flowAppId }) };
    case 'twilio':
      return common;
  }
}

export function startCallControl(loaded: LoadedConfig, logger: Logger): CallControlPart {
  const { config, secrets } = loaded;
  const { control } = config.calls;
  const log = logger.child({ part: 'call-control' });
  const documents =
    config.server.publicUrl === null
      ? undefined
      : new PublishedDocuments({
          publicUrl: config.server.publicUrl,
          ttlMs: control.documents.ttlMs,
          maxDocuments: control.documents.maxDocuments,
        });
  // The app's own secrets that end up in a request (the token in a stream URL's path) are scrubbed too.
  const scrubbed = [secrets.mediaStreamToken, secrets.controlToken].filter((s): s is string => !!s);
  const ports = new Map<GatewayName, CallControlAvailability>();
  for (const gateway of config.calls.gateways) {
    const made = callControlFor(gateway, secrets.callControl, {
      ...callControlSettings(gateway, control, config.calls.formats),
      logger: log,
      secrets: scrubbed,
      ...(documents ? { documents } : {}),
    });
    ports.set(gateway, made);
    if (made.ok) log.info({ gateway, capabilities: made.control.capabilities }, 'call control ready');
    else log.debug({ gateway, code: made.error.code, missing: made.error.missing }, 'no call control');
  }
  const controls: CallControls = {
    hangUpAtGateway: control.hangUpAtGateway,
    port: (gateway) =>
      ports.get(gateway) ?? {
        ok: false,
        error: new CallControlError({
          code: 'not_configured',
          gateway,
          operation: 'configure',
          message: `${gateway} is not among calls.gateways`,
        }),
      },
  };
  return {
    controls,
    documents,
    routes: documents ? [documents.route()] : [],
    async close() {
      await Promise.all([...ports.values()].flatMap((p) => (p.ok ? [p.control.close()] : [])));
    },
  };
}
