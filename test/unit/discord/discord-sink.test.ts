/**
 * The Discord sink's audio, read straight from the resource's Opus stream and decoded again (as
 * discord.md suggests): every frame becomes one packet, nothing is lost at the end, the pitch survives;
 * and clear() stops the player the safe way.
 */
import OpusScript from 'opusscript';
import { describe, expect, it } from 'vitest';
import type { AudioResource } from '@discordjs/voice';
import { DiscordSink, type DiscordPlayer } from '../../../adapters/discord/discord-sink.js';
import { FramePipeline } from '../../../src/speaker/frame-pipeline.js';

class RecordingPlayer implements DiscordPlayer {
  readonly resources: AudioResource[] = [];
  stops: Array<boolean | undefined> = [];
  play(resource: AudioResource): void {
    this.resources.push(resource);
  }
  stop(force?: boolean): boolean {
    this.stops.push(force);
    return true;
  }
}

/** A 24 kHz s16le tone of `ms` milliseconds, as the speech service would send it. */
function tone24k(frequencyHz: number, ms: number): Uint8Array {
  const samples = new Int16Array((24_000 * ms) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(12_000 * Math.sin((2 * Math.PI * frequencyHz * i) / 24_000));
  return new Uint8Array(samples.buffer);
}

/** Decodes every Opus packet of a resource into 48 kHz stereo samples (left channel returned). */
function decodeAll(resource: AudioResource): Promise<{ packets: number; left: Int16Array }> {
  const decoder = new OpusScript(48_000, 2);
  const parts: Int16Array[] = [];
  let packets = 0;
  return new Promise((resolve, reject) => {
    resource.playStream.on('data', (packet: Buffer) => {
      packets++;
      const pcm = decoder.decode(packet);
      const stereo = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
      const left = new Int16Array(stereo.length / 2);
      for (let i = 0; i < left.length; i++) left[i] = stereo[2 * i]!;
      parts.push(left);
    });
    resource.playStream.on('error', reject);
    resource.playStream.on('end', () => {
      const left = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
      let o = 0;
      for (const p of parts) {
        left.set(p, o);
        o += p.length;
      }
      decoder.delete();
      resolve({ packets, left });
    });
  });
}

describe('DiscordSink', () => {
  it('turns every 20 ms frame into one Opus packet that decodes back to the same tone, last frame included', async () => {
    const player = new RecordingPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 5 });
    const pipeline = new FramePipeline(24_000, sink.format, 20);
    // 1010 ms of a 440 Hz tone: 50 whole frames and a last partial one, padded by the pipeline.
    const frames = [...pipeline.push(tone24k(440, 1010)), ...pipeline.finish()];
    expect(frames).toHaveLength(51);
    let decoded: Promise<{ packets: number; left: Int16Array }> | undefined;
    for (const payload of frames) {
      await sink.write({ payload, epoch: 0, utteranceId: 'u' });
      // Playback starts after the pre-buffer; from then on the player (here: the test) pulls.
      if (!decoded && player.resources.length === 1) decoded = decodeAll(player.resources[0]!);
    }
    expect(player.resources).toHaveLength(1);
    sink.flush();
    const { packets, left } = await decoded!;
    expect(packets).toBe(51);
    expect(left.length).toBe(51 * 960);
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
    const player = new RecordingPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 5 });
    await sink.write({ payload: new Uint8Array(3840), epoch: 0, utteranceId: 'u' });
    expect(player.resources).toHaveLength(0);
    sink.flush();
    expect(player.resources).toHaveLength(1);
    await expect(sink.write({ payload: new Uint8Array(100), epoch: 0, utteranceId: 'u' })).rejects.toThrow(
      /3840 bytes/,
    );
  });

  it('clear() stops the player without force (no stale packet left) and drops the rest of the run', async () => {
    const player = new RecordingPlayer();
    const sink = new DiscordSink(player, { prebufferFrames: 2 });
    for (let i = 0; i < 3; i++)
      await sink.write({ payload: new Uint8Array(3840), epoch: 0, utteranceId: 'u' });
    const resource = player.resources[0]!;
    sink.clear();
    expect(player.stops).toEqual([undefined]);
    expect(sink.writtenMs()).toBe(sink.playedMs());
    // The next utterance gets a fresh resource.
    for (let i = 0; i < 2; i++)
      await sink.write({ payload: new Uint8Array(3840), epoch: 1, utteranceId: 'v' });
    expect(player.resources).toHaveLength(2);
    expect(player.resources[1]).not.toBe(resource);
  });
});
