/**
 * The bodies of `/with-timestamps` and `/stream/with-timestamps`: the audio as base64 in JSON, with its
 * character timings (ElevenLabs' `audio_base64`, `alignment`, `normalized_alignment`). The audio is
 * the same bytes the plain endpoints send, in the requested format; `normalized_alignment` repeats
 * `alignment`, since this service speaks the text as given (docs/speech-service.md, "Character
 * timings").
 *
 * The stream is one JSON object per line, each ended by "\n": what the official SDKs split on (the JS
 * SDK's `streamWithTimestamps` parses every "\n"-terminated line as one object, skips blank lines, and
 * drops a last one without its "\n"). Times count from the first sample of the whole response, in
 * every object.
 */
import type { ServerResponse } from 'node:http';
import { encodeBase64 } from '../protocols/common.js';
import type { OutputFormat } from '../speech/formats.js';
import { CharacterTimeline, emptyAlignment, type AlignmentJson } from './character-timeline.js';
import { streamedWavHeader, wholeWavHeader, type AudioEncoder } from './encoders.js';
import type { TimedAudio } from './engine/pool.js';
import { OUTPUT_SAMPLE_RATE } from './engine/engine.js';
import { WHOLE_BODY_MEMORY_BYTES, write } from './speech-body.js';

/** What ElevenLabs declares for both: JSON (the stream being JSON objects one per line). */
export const TIMESTAMPS_CONTENT_TYPE = 'application/json';

const BASE64_GROUP_BYTES = 3;

function samplesToMs(samples: number): number {
  return (samples * 1000) / OUTPUT_SAMPLE_RATE;
}

function withPreamble(encoder: AudioEncoder, bytes: Uint8Array): Uint8Array {
  return encoder.preamble ? Buffer.concat([encoder.preamble, bytes]) : bytes;
}

function streamLine(audio: Uint8Array, alignment: AlignmentJson): string {
  const object = { audio_base64: encodeBase64(audio), alignment, normalized_alignment: alignment };
  return `${JSON.stringify(object)}\n`;
}

/**
 * Base64 of a byte stream, chunk by chunk, for a whole body too long to hold: base64 encodes groups of
 * three bytes, so each chunk's last one or two bytes wait for the next chunk.
 */
class Base64Chunks {
  readonly #carry = new Uint8Array(BASE64_GROUP_BYTES);
  #carried = 0;

  push(bytes: Uint8Array): string {
    let i = 0;
    let out = '';
    if (this.#carried > 0) {
      while (this.#carried < BASE64_GROUP_BYTES && i < bytes.length)
        this.#carry[this.#carried++] = bytes[i++]!;
      if (this.#carried < BASE64_GROUP_BYTES) return '';
      out = encodeBase64(this.#carry);
      this.#carried = 0;
    }
    const whole = i + Math.floor((bytes.length - i) / BASE64_GROUP_BYTES) * BASE64_GROUP_BYTES;
    out += encodeBase64(bytes.subarray(i, whole));
    for (let j = whole; j < bytes.length; j++) this.#carry[this.#carried++] = bytes[j]!;
    return out;
  }

  end(): string {
    const out = encodeBase64(this.#carry.subarray(0, this.#carried));
    this.#carried = 0;
    return out;
  }
}

/**
 * `/stream/with-timestamps`: an object per engine chunk, flushed as soon as it exists, carrying that
 * chunk's audio and the characters whose sound ends within the audio sent so far (and was not sent
 * before); the last object carries the rest. As for `/stream`, headers go out with the first audio, and
 * a failure after them cuts the connection.
 */
export async function streamWithTimestamps(
  res: ServerResponse,
  headers: Record<string, string>,
  encoder: AudioEncoder,
  audio: AsyncGenerator<TimedAudio>,
  text: string,
  signal: AbortSignal,
): Promise<void> {
  const timeline = new CharacterTimeline(text);
  let started = false;
  let samples = 0;
  try {
    for await (const chunk of audio) {
      for (const word of chunk.words) timeline.addWord(word);
      samples += chunk.samples.length;
      let bytes = encoder.push(chunk.samples);
      if (!started) {
        if (bytes.byteLength === 0) continue;
        started = true;
        res.writeHead(200, headers);
        bytes = withPreamble(encoder, bytes);
      }
      const alignment = timeline.take(samplesToMs(samples));
      if (bytes.byteLength === 0 && alignment === undefined) continue;
      await write(res, streamLine(bytes, alignment ?? emptyAlignment()), signal);
    }
    let tail = encoder.end();
    if (!started) {
      res.writeHead(200, headers);
      tail = withPreamble(encoder, tail);
    }
    await write(res, streamLine(tail, timeline.finish(samplesToMs(samples))), signal);
    res.end();
  } catch (error) {
    if (started) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    throw error;
  }
}

/**
 * `/with-timestamps`: one JSON object. Like the plain whole body, it is held (with its Content-Length
 * and, for WAV, a header with the real sizes) while the audio stays under WHOLE_BODY_MEMORY_BYTES;
 * past it the object goes out as it is produced, its base64 chunk by chunk and the timings after it
 * (the streamed WAV header then), so memory per request stays bounded.
 */
export async function wholeWithTimestamps(
  res: ServerResponse,
  headers: Record<string, string>,
  format: OutputFormat,
  encoder: AudioEncoder,
  audio: AsyncGenerator<TimedAudio>,
  text: string,
  signal: AbortSignal,
): Promise<void> {
  const timeline = new CharacterTimeline(text);
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  let samples = 0;
  /** Set once the body streams. */
  let base64: Base64Chunks | undefined;
  try {
    for await (const chunk of audio) {
      for (const word of chunk.words) timeline.addWord(word);
      samples += chunk.samples.length;
      const bytes = encoder.push(chunk.samples);
      if (base64) {
        await write(res, base64.push(bytes), signal);
        continue;
      }
      held.push(bytes);
      heldBytes += bytes.byteLength;
      if (heldBytes > WHOLE_BODY_MEMORY_BYTES) {
        base64 = new Base64Chunks();
        res.writeHead(200, headers);
        await write(res, '{"audio_base64":"', signal);
        if (format === 'wav_24000') await write(res, base64.push(streamedWavHeader()), signal);
        for (const part of held.splice(0)) await write(res, base64.push(part), signal);
      }
    }
    const tail = encoder.end();
    const alignment = JSON.stringify(timeline.finish(samplesToMs(samples)));
    const timings = `"alignment":${alignment},"normalized_alignment":${alignment}}`;
    if (base64) {
      await write(res, `${base64.push(tail)}${base64.end()}",${timings}`, signal);
      res.end();
      return;
    }
    held.push(tail);
    heldBytes += tail.byteLength;
    signal.throwIfAborted();
    if (format === 'wav_24000') held.unshift(wholeWavHeader(heldBytes));
    const body = `{"audio_base64":"${encodeBase64(Buffer.concat(held))}",${timings}`;
    res.writeHead(200, { ...headers, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  } catch (error) {
    // After the headers, only a cut connection says it failed: a clean end would look like success.
    if (base64) {
      res.destroy(error instanceof Error ? error : undefined);
      return;
    }
    throw error;
  }
}
