/**
 * One call from the browser: the page plays a Twilio gateway. Audio runs at 8 kHz mu-law in both
 * directions through an AudioWorklet (`worklet.ts`); the WebSocket carries Twilio's messages, built by
 * the same module as the terminal softphone's.
 */
import { decodeMulaw, encodeMulaw } from '../../src/audio/g711.js';
import { parseServerMessage, twilioSid, TwilioCallerMessages } from '../../src/protocols/twilio-caller.js';
import { SAMPLE_RATE, type FromWorklet, type ToWorklet } from './worklet-messages.js';

export interface PhoneCallOptions {
  /** `ws://host/media/twilio` (with `?token=` when the server wants MEDIA_STREAM_TOKEN). */
  url: string;
  /** Custom parameters of the start message (`flow`). */
  parameters: Record<string, string>;
  /** The worklet module's URL. */
  workletUrl: string;
}

export interface PhoneCallEvents {
  /** The WebSocket is open and the start message sent. */
  connected(): void;
  /** Every 20 ms: both directions' levels (dBFS), and whether the microphone is muted. */
  frame(outDb: number, micDb: number, muted: boolean): void;
  /** The server's clear arrived (a barge-in or a key press): `droppedMs` of queued audio went. */
  cleared(atMs: number, droppedMs: number): void;
  /** The call is over: the server closed it, the caller hung up, or it could not connect. */
  ended(reason: string): void;
}

export class PhoneCall {
  readonly callSid = twilioSid('CA');
  readonly streamSid = twilioSid('MZ');
  /** When each 20 ms of caller audio left, by its timestamp on the caller's timeline (ms). */
  private readonly sentAt = new Map<number, number>();
  private readonly messages: TwilioCallerMessages;
  private ws: WebSocket | undefined;
  private context: AudioContext | undefined;
  private node: AudioWorkletNode | undefined;
  private microphone: MediaStream | undefined;
  private ended = false;
  muted = false;
  /** When the call connected (performance.now()), and when its first audible audio played. */
  connectedAt: number | undefined;
  firstAudioAt: number | undefined;

  constructor(
    private readonly options: PhoneCallOptions,
    private readonly on: PhoneCallEvents,
  ) {
    this.messages = new TwilioCallerMessages(
      { callSid: this.callSid, streamSid: this.streamSid },
      options.parameters,
    );
  }

  /**
   * Opens audio (asking for the microphone; without one the call goes on, silent) and the WebSocket.
   * Resolves with a warning about the microphone, if there is one to show.
   */
  async start(): Promise<string | undefined> {
    const context = new AudioContext({ sampleRate: SAMPLE_RATE, latencyHint: 'interactive' });
    this.context = context;
    await context.audioWorklet.addModule(this.options.workletUrl);
    const node = new AudioWorkletNode(context, 'voxbridge-phone-io', {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      outputChannelCount: [1],
    });
    this.node = node;
    node.port.onmessage = (e: MessageEvent<FromWorklet>) => this.fromWorklet(e.data);
    node.connect(context.destination);
    let warning: string | undefined;
    try {
      // Echo cancellation on, as a phone has it, so that the bot's voice from the speakers does not
      // barge in; no noise suppression or gain control, which reshape what the detector listens to.
      this.microphone = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: false, autoGainControl: false, channelCount: 1 },
      });
      context.createMediaStreamSource(this.microphone).connect(node);
    } catch (error) {
      warning = `no microphone (${(error as Error).message}): the call goes on, but you cannot barge in by voice`;
    }
    await context.resume();
    await this.connect();
    return warning;
  }

  private async connect(): Promise<void> {
    const ws = new WebSocket(this.options.url);
    this.ws = ws;
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => resolve();
      ws.onerror = () => reject(new Error('the media stream could not be opened'));
      ws.onclose = (e) => reject(new Error(closeReason(e)));
    });
    ws.onclose = (e) => this.finish(closeReason(e));
    ws.onerror = null;
    ws.onmessage = (e: MessageEvent<unknown>) => {
      if (typeof e.data === 'string') this.fromServer(e.data);
    };
    for (const message of this.messages.start()) this.send(message);
    this.connectedAt = performance.now();
    this.on.connected();
  }

  dtmf(digit: string): void {
    this.send(this.messages.dtmf(digit));
  }

  /** The caller hangs up: `stop`, then the socket closes. */
  hangup(): void {
    if (this.ws?.readyState === WebSocket.OPEN) {
      this.send(this.messages.stop());
      this.ws.close(1000, 'caller hung up');
    }
    this.finish('you hung up');
  }

  /** When the caller audio at `timestampMs` (the server's timeline for barge-in onsets) left the page. */
  sentTime(timestampMs: number): number | undefined {
    return this.sentAt.get(Math.floor(timestampMs / 20) * 20);
  }

  private send(message: object): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private toWorklet(message: ToWorklet, transfer: Transferable[] = []): void {
    this.node?.port.postMessage(message, transfer);
  }

  private fromServer(text: string): void {
    const message = parseServerMessage(text);
    if (!message) return;
    switch (message.type) {
      case 'media': {
        const pcm = decodeMulaw(message.payload);
        const samples = new Float32Array(pcm.length);
        for (let i = 0; i < pcm.length; i++) samples[i] = pcm[i]! / 32768;
        this.toWorklet({ type: 'play', samples }, [samples.buffer]);
        return;
      }
      case 'mark':
        this.toWorklet({ type: 'mark', name: message.name });
        return;
      case 'clear':
        this.toWorklet({ type: 'clear' });
        return;
    }
  }

  private fromWorklet(message: FromWorklet): void {
    switch (message.type) {
      case 'frame': {
        if (this.ended || this.ws?.readyState !== WebSocket.OPEN) return;
        // Muted, the line still carries 20 ms of silence each time, as a phone's would.
        const pcm = this.muted ? new Int16Array(message.mic.length) : message.mic;
        const { message: media, timestampMs } = this.messages.media(encodeMulaw(pcm));
        this.sentAt.set(timestampMs, performance.now());
        this.sentAt.delete(timestampMs - 60_000);
        this.send(media);
        if (this.firstAudioAt === undefined && message.outDb > -50) this.firstAudioAt = performance.now();
        this.on.frame(message.outDb, this.muted ? -100 : message.micDb, this.muted);
        return;
      }
      case 'marked':
        this.send(this.messages.mark(message.name));
        return;
      case 'cleared':
        this.on.cleared(performance.now(), message.droppedMs);
        return;
    }
  }

  private finish(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    for (const track of this.microphone?.getTracks() ?? []) track.stop();
    void this.context?.close();
    this.on.ended(reason);
  }
}

function closeReason(e: CloseEvent): string {
  if (e.code === 1000) return e.reason || 'the call ended';
  if (e.code === 1006) return 'the media stream closed without a reason (refused, or the server went away)';
  return `${e.reason || 'the media stream closed'} (${e.code})`;
}
