/**
 * A simulated channel member that is a real DAVE participant: its own @snazzah/davey session (MLS key
 * package, proposals → commit and welcome, transitions, per-frame AES-GCM), driven by the voice
 * gateway's opcodes as a Discord client is. It encrypts what it says end to end and decrypts what the
 * bot says; frames it could not decrypt, and frames that came in the clear, are counted, not played.
 *
 * Its socket is the fake's in-process link: the same JSON and binary payloads a WebSocket would carry,
 * delivered on a later turn of the event loop in order.
 */
import davey from '@snazzah/davey';
import OpusScript from 'opusscript';
import { DAVE_OP, type DavePeer } from './delivery.js';
import { isDaveFrame } from './mls.js';

/** Discord's Opus silence frame: passed through untransformed (protocol.md, "Silence Packets"). */
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);
const PROTOCOL_VERSION = 1;
/** davey's MediaType.AUDIO (an ambient const enum, which this build cannot read). */
const AUDIO = 0;

/** The member's way to the gateway (the fake voice server). */
export interface MemberLink {
  json(member: DaveMember, op: number, d: Record<string, unknown>): void;
  binary(member: DaveMember, op: number, payload: Buffer): void;
}

/** One frame of the bot's the member got. */
export interface HeardFrame {
  arrivalMs: number;
  /** What happened to it: decrypted, silence (passes untransformed), clear (not E2EE: refused), failed. */
  outcome: 'decrypted' | 'silence' | 'clear' | 'failed';
  opus: Buffer | undefined;
  /** 48 kHz stereo, when the member decodes. */
  pcm: Int16Array | undefined;
}

export interface DaveMemberOptions {
  /** Opus-decode what it decrypts (default true). */
  decode?: boolean;
  /** Delay of what it sends the gateway (default 0: the next turn), as a member far away. */
  latencyMs?: number;
}

export class DaveMember implements DavePeer {
  readonly session: davey.DAVESession;
  readonly heard: HeardFrame[] = [];
  /** Transitions executed, in order (0: a group (re)initialised). */
  readonly transitions: number[] = [];
  /** Op 31s it sent (an unprocessable commit or welcome). */
  invalidations = 0;
  private readonly recognized = new Set<string>();
  private readonly pending = new Set<number>();
  private decoder: OpusScript | undefined;
  private readonly decode: boolean;
  private readonly latencyMs: number;
  private isClosed = false;

  constructor(
    readonly userId: string,
    readonly channelId: string,
    private readonly link: MemberLink,
    options: DaveMemberOptions = {},
  ) {
    this.session = new davey.DAVESession(PROTOCOL_VERSION, userId, channelId);
    this.decode = options.decode ?? true;
    this.latencyMs = options.latencyMs ?? 0;
  }

  /** It left (its session is reset). */
  get closed(): boolean {
    return this.isClosed;
  }

  /** In an established group, able to encrypt and decrypt. */
  get ready(): boolean {
    return !this.isClosed && this.session.ready;
  }

  get epoch(): bigint | null {
    return this.session.epoch;
  }

  get voicePrivacyCode(): string {
    return this.session.voicePrivacyCode;
  }

  /** After the session description: its first key package. */
  start(): void {
    this.toGateway(DAVE_OP.keyPackage, this.session.getSerializedKeyPackage());
  }

  // DavePeer: the gateway's messages reach the member on a later turn, in order.
  sendJson(op: number, d: unknown): void {
    setImmediate(() => this.onJson(op, d as Record<string, unknown>));
  }

  sendBinary(op: number, payload: Buffer): void {
    const copy = Buffer.from(payload);
    setImmediate(() => this.onBinary(op, copy));
  }

  /** End-to-end encrypts one Opus frame; undefined while not in a group (a client stays quiet then). */
  encrypt(opus: Buffer): Buffer | undefined {
    if (!this.ready) return undefined;
    return this.session.encryptOpus(opus);
  }

  /** A frame of `senderId`'s, as the SFU forwards it. */
  hear(senderId: string, frame: Buffer, arrivalMs: number): HeardFrame {
    let heard: HeardFrame;
    if (frame.equals(SILENCE)) heard = { arrivalMs, outcome: 'silence', opus: frame, pcm: undefined };
    else if (!isDaveFrame(frame)) heard = { arrivalMs, outcome: 'clear', opus: undefined, pcm: undefined };
    else {
      let opus: Buffer | undefined;
      try {
        opus = this.session.ready ? this.session.decrypt(senderId, AUDIO, frame) : undefined;
      } catch {
        opus = undefined;
      }
      heard = opus
        ? { arrivalMs, outcome: 'decrypted', opus, pcm: this.decode ? this.decodeOpus(opus) : undefined }
        : { arrivalMs, outcome: 'failed', opus: undefined, pcm: undefined };
    }
    this.heard.push(heard);
    return heard;
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    try {
      this.session.reset();
    } catch {
      // already reset
    }
    this.decoder?.delete();
    this.decoder = undefined;
  }

  private decodeOpus(opus: Buffer): Int16Array {
    this.decoder ??= new OpusScript(48_000, 2);
    const out = this.decoder.decode(opus);
    return new Int16Array(out.buffer, out.byteOffset, out.length / 2).slice();
  }

  private onJson(op: number, d: Record<string, unknown>): void {
    if (this.isClosed) return;
    switch (op) {
      case DAVE_OP.clientsConnect:
        for (const id of d['user_ids'] as string[]) this.recognized.add(id);
        return;
      case DAVE_OP.clientDisconnect:
        this.recognized.delete(String(d['user_id']));
        return;
      case DAVE_OP.prepareEpoch:
        if (d['epoch'] === 1) this.reinit();
        return;
      case DAVE_OP.prepareTransition: {
        const id = Number(d['transition_id']);
        if (id === 0) this.transitions.push(0);
        else {
          this.pending.add(id);
          this.toGateway(DAVE_OP.transitionReady, { transition_id: id });
        }
        return;
      }
      case DAVE_OP.executeTransition: {
        const id = Number(d['transition_id']);
        if (this.pending.delete(id)) this.transitions.push(id);
        return;
      }
      default:
        return;
    }
  }

  private onBinary(op: number, payload: Buffer): void {
    if (this.isClosed) return;
    switch (op) {
      case DAVE_OP.externalSender:
        this.session.setExternalSender(payload);
        return;
      case DAVE_OP.proposals: {
        let result: davey.ProposalsResult;
        try {
          result = this.session.processProposals(payload[0]!, payload.subarray(1), [...this.recognized]);
        } catch {
          return; // proposals it cannot use (no local group yet): ignored, as the protocol says
        }
        if (result.commit)
          this.toGateway(
            DAVE_OP.commitWelcome,
            result.welcome ? Buffer.concat([result.commit, result.welcome]) : result.commit,
          );
        return;
      }
      case DAVE_OP.announceCommit:
      case DAVE_OP.welcome: {
        const id = payload.readUInt16BE(0);
        try {
          if (op === DAVE_OP.welcome) this.session.processWelcome(payload.subarray(2));
          else this.session.processCommit(payload.subarray(2));
        } catch {
          this.invalidations++;
          this.toGateway(DAVE_OP.invalidCommitWelcome, { transition_id: id });
          this.reinit();
          return;
        }
        if (id === 0) this.transitions.push(0);
        else {
          this.pending.add(id);
          this.toGateway(DAVE_OP.transitionReady, { transition_id: id });
        }
        return;
      }
      default:
        return;
    }
  }

  /** A message to the gateway: binary (a Buffer) or JSON, after the member's latency. */
  private toGateway(op: number, message: Buffer | Record<string, unknown>): void {
    const send = (): void => {
      if (this.isClosed) return;
      if (Buffer.isBuffer(message)) this.link.binary(this, op, message);
      else this.link.json(this, op, message);
    };
    if (this.latencyMs > 0) setTimeout(send, this.latencyMs);
    else send();
  }

  private reinit(): void {
    this.session.reinit(PROTOCOL_VERSION, this.userId, this.channelId);
    this.toGateway(DAVE_OP.keyPackage, this.session.getSerializedKeyPackage());
  }
}
