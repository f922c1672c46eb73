/**
 * Opus for Discord: 20 ms of 48 kHz stereo s16le in, one packet out; and back, for hearing members.
 *
 * Each guild keeps one encoder for its life (a new run of speech resets it) instead of prism-media's
 * encoder per audio resource. The encoder is `@evan/opus`: prebuilt native bindings for the common
 * platforms inside the npm package (no install script, nothing to compile or download), and its own
 * WebAssembly build elsewhere. `@discordjs/opus` is used instead when it is installed.
 *
 * Why not opusscript, prism-media's fallback: its PCM views are taken from the 16-bit heap at the
 * byte address of the buffer, so once an instance's buffer lies past half of the WebAssembly heap,
 * every encode fails ("offset is out of bounds"), and a heap growth detaches the views of every live
 * instance, so it fails once enough guilds speak at once (figures: docs/discord.md, «Playback»).
 */
import { createRequire } from 'node:module';

/** One Opus stream's state: packets depend on the ones before. */
export interface OpusEncoder {
  /**
   * One 20 ms frame (3840 bytes of 48 kHz stereo s16le) → one Opus packet. A Buffer, not any
   * Uint8Array: @discordjs/voice's DAVE session calls `packet.equals(...)` on every packet it
   * end-to-end encrypts, and a plain Uint8Array there throws out of the audio cycle.
   */
  encode(frame: Uint8Array): Buffer;
  /** Forgets the stream so far (a new run of speech). */
  reset(): void;
}

export interface OpusDecoder {
  /** One packet → 48 kHz stereo s16le. */
  decode(packet: Uint8Array): Uint8Array;
}

export type OpusImplementation = '@discordjs/opus' | '@evan/opus (native)' | '@evan/opus (wasm)';

const require = createRequire(import.meta.url);
const SAMPLE_RATE = 48_000;
const CHANNELS = 2;
/** Discord's voice bitrate is up to 64 kb/s for most servers; speech needs less. */
const BITRATE = 64_000;

interface DiscordJsOpus {
  OpusEncoder: new (
    rate: number,
    channels: number,
  ) => {
    encode(pcm: Buffer): Buffer;
    decode(packet: Buffer): Buffer;
    setBitrate(bitrate: number): void;
  };
}

interface EvanOpus {
  Encoder: new (o: { channels: 2; sample_rate: 48_000; application: 'audio' | 'voip' }) => {
    encode(pcm: ArrayBufferView): Uint8Array;
    reset(): void;
    bitrate: number;
  };
  Decoder: new (o: { channels: 2; sample_rate: 48_000 }) => { decode(packet: ArrayBufferView): Uint8Array };
}

function loadDiscordJs(): DiscordJsOpus | undefined {
  try {
    return require('@discordjs/opus') as DiscordJsOpus;
  } catch {
    return undefined;
  }
}

let cached: { name: OpusImplementation; discordjs?: DiscordJsOpus; evan?: EvanOpus } | undefined;

function load(): NonNullable<typeof cached> {
  if (cached) return cached;
  const discordjs = loadDiscordJs();
  if (discordjs) return (cached = { name: '@discordjs/opus', discordjs });
  const evan = require('@evan/opus') as EvanOpus;
  // Its loader falls back to WebAssembly when no native binding fits this platform.
  let native = true;
  try {
    require('@evan/opus/node/index.js');
  } catch {
    native = false;
  }
  return (cached = { name: native ? '@evan/opus (native)' : '@evan/opus (wasm)', evan });
}

/** Which implementation encodes here. */
export function opusImplementation(): OpusImplementation {
  return load().name;
}

/** s16le bytes as samples (copied when the bytes do not start on a 2-byte boundary). */
function samples(frame: Uint8Array): Int16Array {
  if (frame.byteOffset % 2 === 0) return new Int16Array(frame.buffer, frame.byteOffset, frame.byteLength / 2);
  return new Int16Array(frame.slice().buffer);
}

export function createOpusEncoder(): OpusEncoder {
  const lib = load();
  if (lib.discordjs) {
    const Encoder = lib.discordjs.OpusEncoder;
    let encoder = new Encoder(SAMPLE_RATE, CHANNELS);
    encoder.setBitrate(BITRATE);
    return {
      encode: (frame) => encoder.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)),
      reset: () => {
        encoder = new Encoder(SAMPLE_RATE, CHANNELS);
        encoder.setBitrate(BITRATE);
      },
    };
  }
  const encoder = new lib.evan!.Encoder({
    channels: CHANNELS,
    sample_rate: SAMPLE_RATE,
    application: 'audio',
  });
  encoder.bitrate = BITRATE;
  return {
    // The packet is a view into the encoder's own memory: copy it (into a Buffer) before the next encode.
    encode: (frame) => Buffer.from(encoder.encode(samples(frame))),
    reset: () => encoder.reset(),
  };
}

export function createOpusDecoder(): OpusDecoder {
  const lib = load();
  if (lib.discordjs) {
    const decoder = new lib.discordjs.OpusEncoder(SAMPLE_RATE, CHANNELS);
    return {
      decode: (packet) => decoder.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength)),
    };
  }
  const decoder = new lib.evan!.Decoder({ channels: CHANNELS, sample_rate: SAMPLE_RATE });
  return { decode: (packet) => decoder.decode(packet).slice() };
}
