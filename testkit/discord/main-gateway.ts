/**
 * The bot's main gateway connection, as far as a guild's voice needs it: `FakeMainGateway` is the
 * `adapterCreator` that `joinVoiceChannel` is given, answers the voice-state payload with the voice
 * state and voice server updates, and simulates kicks, moves, region changes and a shard going away.
 */
import { randomBytes } from 'node:crypto';
import type { DiscordGatewayAdapterCreator, DiscordGatewayAdapterLibraryMethods } from '@discordjs/voice';

/**
 * The voice server the updates point at (`FakeVoiceServer` is one). An interface, not that class: the
 * voice server's module re-exports this one, and the two must not import each other.
 */
export interface VoiceEndpoint {
  /** What a VOICE_SERVER_UPDATE carries. */
  readonly endpoint: string;
  /** The bot of `sessionId` is now in `channelId`. */
  place(sessionId: string, channelId: string): void;
  /** Closes every bot's voice WebSocket with `code`. */
  closeSocket(code: number): void;
}

export interface GatewayIds {
  guildId: string;
  /** The bot's user id. */
  userId: string;
  /** The main gateway session id (default: random). */
  sessionId?: string;
  /** The voice token a VOICE_SERVER_UPDATE carries (default 'voice-token'). */
  token?: string;
}

/** When the gateway's updates follow an event: 0 (default) in the same tick, else `afterMs` later. */
export interface UpdateTiming {
  afterMs?: number;
}

/**
 * The bot's main-gateway side of a guild's voice: `adapterCreator` for `joinVoiceChannel`. It answers
 * every voice-state payload (op 4) the library sends the way Discord does, pointing at `server`.
 */
export class FakeMainGateway {
  /** Op 4 payloads the library sent. */
  readonly sent: Array<{
    op: number;
    d: { guild_id: string; channel_id: string | null; self_deaf: boolean; self_mute: boolean };
  }> = [];
  /** false: the shard is down and payloads cannot be sent. */
  available = true;
  /** Whether to answer joins (false: the voice server never comes, the join times out). */
  answer = true;
  /** Whether the library has destroyed its adapter (the connection was destroyed). */
  adapterDestroyed = false;
  /** The main gateway session id the voice states carry (the bot identifies with it). */
  readonly sessionId: string;
  /** The voice token the voice server updates carry. */
  readonly token: string;
  private methods: DiscordGatewayAdapterLibraryMethods | undefined;
  private channelId: string | null = null;

  constructor(
    private server: VoiceEndpoint,
    private readonly ids: GatewayIds,
  ) {
    this.sessionId = ids.sessionId ?? randomBytes(16).toString('hex');
    this.token = ids.token ?? 'voice-token';
  }

  readonly adapterCreator: DiscordGatewayAdapterCreator = (methods) => {
    this.methods = methods;
    this.adapterDestroyed = false;
    return {
      sendPayload: (payload: unknown) => {
        if (!this.available) return false;
        const p = payload as FakeMainGateway['sent'][number];
        this.sent.push(p);
        if (this.answer) setTimeout(() => this.onPayload(p), 1);
        return true;
      },
      destroy: () => {
        this.methods = undefined;
        this.adapterDestroyed = true;
      },
    };
  };

  /** The channel the bot was last put in (null: none). */
  get channel(): string | null {
    return this.channelId;
  }

  /** The bot is kicked from the channel (or the channel deleted): voice socket 4014, state with no channel. */
  kick(): void {
    this.channelId = null;
    this.stateUpdate(null);
    this.server.closeSocket(4014);
  }

  /**
   * Someone moves the bot to another channel: 4014, then new updates, as Discord does. With `afterMs`,
   * the updates come that much later, so the library sees the 4014 first (Disconnected).
   */
  move(channelId: string, timing: UpdateTiming = {}): void {
    this.server.closeSocket(4014);
    this.later(timing, () => {
      this.channelId = channelId;
      this.stateUpdate(channelId);
      this.serverUpdate(this.server.endpoint);
    });
  }

  /**
   * A region change: the endpoint goes away, then another voice server is given (`afterMs` later, so
   * the library's Disconnected state can be seen in between).
   */
  changeEndpoint(next: VoiceEndpoint, timing: UpdateTiming = {}): void {
    this.serverUpdate(null);
    this.server = next;
    this.later(timing, () => this.serverUpdate(next.endpoint));
  }

  /** The shard went away: discord.js destroys its adapters. */
  destroyAdapter(): void {
    this.methods?.destroy();
  }

  private later({ afterMs = 0 }: UpdateTiming, fn: () => void): void {
    if (afterMs > 0) setTimeout(fn, afterMs);
    else fn();
  }

  private onPayload(p: FakeMainGateway['sent'][number]): void {
    this.channelId = p.d.channel_id;
    this.stateUpdate(p.d.channel_id);
    if (p.d.channel_id !== null) this.serverUpdate(this.server.endpoint);
  }

  private stateUpdate(channelId: string | null): void {
    this.methods?.onVoiceStateUpdate({
      guild_id: this.ids.guildId,
      channel_id: channelId,
      user_id: this.ids.userId,
      session_id: this.sessionId,
      deaf: false,
      mute: false,
      self_deaf: false,
      self_mute: false,
      self_video: false,
      suppress: false,
      request_to_speak_timestamp: null,
    });
  }

  private serverUpdate(endpoint: string | null): void {
    if (endpoint !== null && this.channelId !== null) this.server.place(this.sessionId, this.channelId);
    this.methods?.onVoiceServerUpdate({
      guild_id: this.ids.guildId,
      token: this.token,
      endpoint,
    });
  }
}
