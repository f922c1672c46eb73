/**
 * The Discord sink's audio, read straight from the resource's Opus stream and decoded again (as
 * discord.md suggests): every frame becomes one packet, nothing is lost at the end, the pitch survives;
 * and clear() stops the player the safe way.
 */
import OpusScript from 'opusscript';
import { afterEach, describe, expect, it } from 'vitest';
import type { AudioResource } from '@discordjs/voice';
import { DiscordSink, type DiscordPlayer } from '../../../adapters/discord/discord-sink.js';
import { FramePipeline } from '../../../src/speaker/frame-pipeline.js';
import type { SinkFrame } from '../../../src/speaker/sink.js';

/**
 * A player that takes packets the way `AudioPlayer` does (`resource.read()`, which counts the
 * resource's playback duration), only faster than real time: every 2 ms.
 */
class PullingPlayer implements DiscordPlayer {
  readonly resources: AudioResource[] = [];
  /** Packets taken, per resource. */
  readonly packets = new Map<AudioResource, Buffer[]>();
  stops: Array<boolean | undefined> = [];
  private current: AudioResource | undefined;
  private readonly timer = setInterval(() => this.pull(), 2);

  play(resource: AudioResource): void {
    this.resources.push(resource);
    this.packets.set(resource, []);
    this.current = resource;
  }
  stop(force?: boolean): boolean {
    this.stops.push(force);
    this.current = undefined;
    return true;
  }
  close(): void {
    clearInterval(this.timer);
  }
  private pull(): void {
    const resource = this.current;
    if (!resource) return;
    const packet = resource.read();
    if (packet) this.packets.get(resource)!.push(packet);
  }
}

/** Resolves when the resource's stream has ended (the sink ended the run). */
function ended(resource: AudioResource): Promise<void> {
  return new Promise((resolve) => {
    if (resource.playStream.readableEnded) resolve();
    else resource.playStream.once('end', () => resolve());
  });
}

/** Decodes Opus packets into 48 kHz stereo samples (left channel returned). */
function decode(packets: Buffer[]): Int16Array {
  const decoder = new OpusScript(48_000, 2);
  const left = new Int16Array(packets.length * 960);
  packets.forEach((packet, p) => {
    const pcm = decoder.decode(packet);
    const stereo = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
    for (let i = 0; i < stereo.length / 2; i++) left[p * 960 + i] = stereo[2 * i]!;
  });
  decoder.delete();
  return left;
}

const silentFrame = (): SinkFrame => ({ payload: new Uint8Array(3840), epoch: 0, utteranceId: 'u' });

/** A 24 kHz s16le tone of `ms` milliseconds, as the speech service would send it. */
function tone24k(frequencyHz: number, ms: number): Uint8Array {
  const samples = new Int16Array((24_000 * ms) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(12_000 * Math.sin((2 * Math.PI * frequencyHz * i) / 24_000));
  return new Uint8Array(samples.buffer);
}

describe('DiscordSink', () => {
  const players: PullingPlayer[] = [];
  const newPlayer = (): PullingPlayer => {
    const player = new PullingPlayer();
    players.push(player);
    return player;
  };
  afterEach(() => {
    for (const p of players.splice(0)) p.close();
  });

  it('turns every 20 ms frame into one Opus packet that decodes back to the same tone, last frame included', async () => {
    const player = newPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 5 });
    const pipeline = new FramePipeline(24_000, sink.format, 20);
    // 1010 ms of a 440 Hz tone: 50 whole frames and a last partial one, padded by the pipeline.
    const frames = [...pipeline.push(tone24k(440, 1010)), ...pipeline.finish()];
    expect(frames).toHaveLength(51);
    for (const payload of frames) await sink.write({ payload, epoch: 0, utteranceId: 'u' });
    expect(player.resources).toHaveLength(1);
    sink.flush();
    const resource = player.resources[0]!;
    await ended(resource);
    const packets = player.packets.get(resource)!;
    expect(packets).toHaveLength(51);
    const left = decode(packets);
    // The pitch: zero crossings of the middle second ≈ 2 × 440 per second.
    let crossings = 0;
    for (let i = 4800 + 1; i < 4800 + 38_400; i++) if (left[i - 1]! < 0 !== left[i]! < 0) crossings++;
    expect(crossings / 2 / 0.8).toBeGreaterThan(430);
    expect(crossings / 2 / 0.8).toBeLessThan(450);
    // The tone reaches into the last frame (nothing cut at the end).
    const lastFrame = left.subarray(50 * 960);
    expect(Math.max(...lastFrame.subarray(0, 200).map(Math.abs))).toBeGreaterThan(5000);
    expect(sink.writtenMs()).toBe(51 * 20);
    await sink.whenPlayed(sink.writtenMs());
    expect(sink.playedMs()).toBe(51 * 20);
  });

  it('starts a short utterance at its end even under the pre-buffer, and rejects partial frames', async () => {
    const player = newPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 5 });
    await sink.write(silentFrame());
    expect(player.resources).toHaveLength(0);
    sink.flush();
    expect(player.resources).toHaveLength(1);
    await expect(sink.write({ payload: new Uint8Array(100), epoch: 0, utteranceId: 'u' })).rejects.toThrow(
      /3840 bytes/,
    );
    sink.close();
  });

  it('plays an utterance that follows another in the same run: no new resource, no gap, then ends', async () => {
    const player = newPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 2, holdMs: 40 });
    for (let i = 0; i < 10; i++) await sink.write(silentFrame());
    sink.flush();
    // The next line of a narration arrives while the first still plays.
    for (let i = 0; i < 10; i++) await sink.write(silentFrame());
    sink.flush();
    expect(player.resources).toHaveLength(1);
    await ended(player.resources[0]!);
    expect(player.packets.get(player.resources[0]!)).toHaveLength(20);
    expect(sink.playedMs()).toBe(400);
    // After the run ended, the next utterance gets a fresh resource.
    for (let i = 0; i < 3; i++) await sink.write(silentFrame());
    expect(player.resources).toHaveLength(2);
    expect(sink.writtenMs()).toBe(460);
    sink.close();
  });

  it('clear() stops the player without force (no stale packet left) and drops the rest of the run', async () => {
    const player = newPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 2 });
    for (let i = 0; i < 3; i++) await sink.write(silentFrame());
    const resource = player.resources[0]!;
    sink.clear();
    expect(player.stops).toEqual([undefined]);
    expect(resource.playStream.destroyed).toBe(true);
    expect(sink.writtenMs()).toBe(sink.playedMs());
    // The next utterance gets a fresh resource.
    for (let i = 0; i < 2; i++)
      await sink.write({ payload: new Uint8Array(3840), epoch: 1, utteranceId: 'v' });
    expect(player.resources).toHaveLength(2);
    expect(player.resources[1]).not.toBe(resource);
    sink.close();
  });

  it('a write waiting on the player returns when clear() drops the run (no speaker left hanging)', async () => {
    const stalled: DiscordPlayer = { play: () => undefined, stop: () => true };
    const sink = new DiscordSink(stalled, { prebufferFrames: 1, maxQueuedFrames: 2 });
    let pending: Promise<void> | undefined;
    // Nobody reads: the stream fills and a write waits.
    for (let i = 0; i < 40 && !pending; i++) {
      const write = sink.write(silentFrame());
      const settled = await Promise.race([
        write.then(() => true),
        new Promise((r) => setTimeout(r, 5, false)),
      ]);
      if (!settled) pending = write;
    }
    expect(pending).toBeDefined();
    sink.clear();
    await expect(pending).resolves.toBeUndefined();
  });

  it('whenPlayed() resolves as the player takes the packet, with no timer, and rejects on abort', async () => {
    let current: AudioResource | undefined;
    const manual: DiscordPlayer = { play: (r) => void (current = r), stop: () => true };
    const sink = new DiscordSink(manual, { prebufferFrames: 1 });
    for (let i = 0; i < 3; i++) await sink.write(silentFrame());
    const resource = current!;
    let played = false;
    const waiting = sink.whenPlayed(40).then(() => (played = true));
    await new Promise((r) => setImmediate(r));
    // Watching the reads does not put the stream in flowing mode: the packets wait for the player.
    expect(resource.playStream.readableLength).toBe(3);
    expect(played).toBe(false);
    expect(resource.read()).not.toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(played).toBe(false);
    expect(resource.read()).not.toBeNull();
    // Woken by the read itself, well before the 20 ms a poll would take.
    await new Promise((r) => setImmediate(r));
    expect(played).toBe(true);
    await waiting;
    const ac = new AbortController();
    const aborted = sink.whenPlayed(60, ac.signal);
    ac.abort(new Error('left the channel'));
    await expect(aborted).rejects.toThrow('left the channel');
    sink.close();
  });
});
