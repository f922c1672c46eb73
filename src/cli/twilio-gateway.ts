/**
 * The gateway's end of a Twilio Media Stream (`<Connect><Stream>`), as Twilio speaks it: JSON text
 * messages, `connected` then `start` (callSid, streamSid, mu-law 8 kHz, customParameters), caller
 * audio as `media` (numbers as strings, `timestamp` in ms since the stream began), `dtmf`, marks
 * echoed back, `stop` to hang up. From the server it takes `media`, `mark` and `clear`.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { parseServerMessage, TwilioCallerMessages } from '../protocols/twilio-caller.js';
import { CliError } from './args.js';

export interface TwilioGatewayOptions {
  /** `ws://host:port/media/twilio` */
  url: string;
  /** MEDIA_STREAM_TOKEN, sent as `Authorization: Bearer`. */
  token: string | undefined;
  callSid: string;
  streamSid: string;
  /** `<Parameter>`s of the TwiML: `flow`, … */
  parameters: Record<string, string>;
}

export interface TwilioGatewayEvents {
  media: [bytes: Uint8Array];
  mark: [name: string];
  clear: [];
  closed: [code: number, reason: string];
}

const CONNECT_TIMEOUT_MS = 10_000;
const CLOSE_WAIT_MS = 2000;

async function responseBody(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > 2000) break;
  }
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 300);
}

function connectError(url: string, error: Error): CliError {
  const code = (error as { code?: unknown }).code;
  if (code === 'ECONNREFUSED')
    return new CliError(`no media-stream server at ${url}: start one with \`npm start\` (or pass --url)`);
  return new CliError(`cannot connect to ${url}: ${error.message}`);
}

async function refusedError(url: string, res: IncomingMessage): Promise<CliError> {
  const status = res.statusCode ?? 0;
  const why = await responseBody(res).catch(() => '');
  const detail = why ? `: ${why}` : '';
  if (status === 401 || status === 403)
    return new CliError(
      `the server refused the media stream (${status}${detail}); check --token or MEDIA_STREAM_TOKEN`,
    );
  if (status === 404) return new CliError(`no media endpoint at ${url} (404${detail})`);
  return new CliError(`the server answered ${status} instead of opening the media stream${detail}`);
}

export class TwilioGateway extends EventEmitter<TwilioGatewayEvents> {
  readonly #ws: WebSocket;
  readonly #messages: TwilioCallerMessages;
  readonly #closed: Promise<void>;
  #closeInfo: { code: number; reason: string } | undefined;

  private constructor(ws: WebSocket, options: TwilioGatewayOptions) {
    super();
    this.#ws = ws;
    this.#messages = new TwilioCallerMessages(
      { callSid: options.callSid, streamSid: options.streamSid },
      options.parameters,
    );
    this.#closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.#closeInfo = { code, reason: reason.toString('utf8') };
        this.emit('closed', code, this.#closeInfo.reason);
        resolve();
      });
    });
    ws.on('error', () => undefined); // a close follows, which is what we report
    ws.on('message', (data: Buffer, isBinary) => {
      if (!isBinary) this.#onText(data.toString('utf8'));
    });
  }

  /** Opens the WebSocket; a refusal or an absent server is a `CliError` saying so. */
  static async connect(options: TwilioGatewayOptions): Promise<TwilioGateway> {
    const headers: Record<string, string> = {};
    if (options.token) headers['authorization'] = `Bearer ${options.token}`;
    const ws = new WebSocket(options.url, {
      headers,
      handshakeTimeout: CONNECT_TIMEOUT_MS,
      perMessageDeflate: false,
    });
    await new Promise<void>((resolve, reject) => {
      let refused = false;
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (req, res) => {
        refused = true;
        refusedError(options.url, res)
          .then(reject, reject)
          .finally(() => req.destroy());
      });
      // Stays on, so a late error cannot go unhandled; after a refusal, the refusal is the news.
      ws.on('error', (error) => {
        if (!refused) reject(connectError(options.url, error));
      });
    });
    return new TwilioGateway(ws, options);
  }

  /** How the socket closed, once it has (a `closed` event may have gone before anyone listened). */
  get closeInfo(): { code: number; reason: string } | undefined {
    return this.#closeInfo;
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  /** What Twilio sends once the call's stream starts. */
  start(): void {
    for (const message of this.#messages.start()) this.#send(message);
  }

  /** The caller's audio (mu-law 8 kHz), one media message. */
  sendAudio(payload: Uint8Array): void {
    this.#send(this.#messages.media(payload).message);
  }

  /** A mark whose audio has played, echoed back. */
  returnMark(name: string): void {
    this.#send(this.#messages.mark(name));
  }

  dtmf(digit: string): void {
    this.#send(this.#messages.dtmf(digit));
  }

  /** The caller hangs up: `stop`, then the socket closes. */
  async hangup(): Promise<void> {
    if (this.open) {
      this.#send(this.#messages.stop());
      this.#ws.close(1000, 'caller hung up');
    }
    await this.closed();
  }

  /** Resolves once the socket is closed (terminated if the server does not answer the close). */
  async closed(): Promise<void> {
    if (this.#ws.readyState === WebSocket.CLOSED) return;
    const timer = setTimeout(() => this.#ws.terminate(), CLOSE_WAIT_MS);
    await this.#closed;
    clearTimeout(timer);
  }

  #send(message: unknown): void {
    if (this.open) this.#ws.send(JSON.stringify(message));
  }

  #onText(text: string): void {
    const message = parseServerMessage(text);
    if (message?.type === 'media') this.emit('media', message.payload);
    else if (message?.type === 'mark') this.emit('mark', message.name);
    else if (message?.type === 'clear') this.emit('clear');
  }
}
