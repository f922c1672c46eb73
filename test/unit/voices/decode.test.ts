import { createMp3Encoder } from 'wasm-media-encoders';
import { describe, expect, it } from 'vitest';
import { wavHeader, WavFormatError } from '../../../src/audio/wav.js';
import { analyzeSpeech } from '../../../src/service/voices/analyze.js';
import { decodeSample, UnsupportedSampleError } from '../../../src/service/voices/decode.js';

/** A harmonic tone (a crude vowel) at `f0Hz`. */
function tone(f0Hz: number, sampleRate: number, seconds: number, amplitude = 0.3): Float32Array {
  const out = new Float32Array(Math.round(sampleRate * seconds));
  for (let i = 0; i < out.length; i++) {
    let v = 0;
    for (let h = 1; h * f0Hz < Math.min(4000, sampleRate / 2); h++)
      v += Math.sin((2 * Math.PI * h * f0Hz * i) / sampleRate + h) / h;
    out[i] = amplitude * v;
  }
  return out;
}

function wav16(samples: Float32Array, sampleRate: number): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++)
    data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, samples[i]!)) * 32767), i * 2);
  return Buffer.concat([
    wavHeader({ sampleRate, channels: 1, bitsPerSample: 16, dataBytes: data.length }),
    data,
  ]);
}

async function mp3(channels: Float32Array[], sampleRate: number): Promise<Uint8Array> {
  const encoder = await createMp3Encoder();
  encoder.configure({ sampleRate, channels: channels.length as 1 | 2, vbrQuality: 2 });
  // encode() and finalize() return views into the encoder's memory, reused by the next call: copy them.
  const parts = [encoder.encode(channels).slice(), encoder.finalize().slice()];
  return Buffer.concat(parts);
}

/** An ID3v2.4 tag holding one padded text frame, as taggers put in front of MP3 files. */
function id3Tag(bodyBytes: number): Buffer {
  const head = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]);
  head[6] = (bodyBytes >> 21) & 0x7f;
  head[7] = (bodyBytes >> 14) & 0x7f;
  head[8] = (bodyBytes >> 7) & 0x7f;
  head[9] = bodyBytes & 0x7f;
  const body = Buffer.alloc(bodyBytes);
  body.write('TIT2\x00\x00\x00\x06\x00\x00\x03voice', 0, 'latin1');
  return Buffer.concat([head, body]);
}

async function rejection(promise: Promise<unknown>): Promise<UnsupportedSampleError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UnsupportedSampleError);
  return error as UnsupportedSampleError;
}

describe('decodeSample', () => {
  it('decodes a WAV to mono samples at its own rate', async () => {
    const input = tone(180, 16_000, 1.2);
    const out = await decodeSample(wav16(input, 16_000), 'me.wav', 'audio/wav');
    expect(out.sampleRate).toBe(16_000);
    expect(out.samples.length).toBe(input.length);
    expect(out.samples[100]).toBeCloseTo(input[100]!, 4);
  });

  it('decodes an MP3 to mono with its duration and pitch intact', async () => {
    const sampleRate = 22_050;
    const input = tone(200, sampleRate, 1.5);
    const out = await decodeSample(await mp3([input], sampleRate), 'me.mp3', 'audio/mpeg');
    expect(out.sampleRate).toBe(sampleRate);
    // This encoder writes no Xing/LAME tag, so the decoder keeps its delay and padding: under 2 frames.
    expect(out.samples.length).toBeGreaterThanOrEqual(input.length);
    expect(out.samples.length - input.length).toBeLessThan(2 * 1152);
    expect(analyzeSpeech(out.samples, out.sampleRate).f0Hz).toBeCloseTo(200, -1);
  });

  it('decodes no more of a long MP3 than asked for: the output, not the file, bounds the memory', async () => {
    const sampleRate = 22_050;
    const input = tone(200, sampleRate, 60, 0.3);
    const file = await mp3([input], sampleRate);
    const whole = await decodeSample(file, 'long.mp3', 'audio/mpeg');
    expect(whole.samples.length).toBeGreaterThanOrEqual(input.length);
    const start = await decodeSample(file, 'long.mp3', 'audio/mpeg', 2);
    // Decoding stops within one feed of 64 KiB (a few seconds at this bitrate) after 2 s.
    expect(start.samples.length).toBeGreaterThanOrEqual(2 * sampleRate);
    expect(start.samples.length).toBeLessThan(whole.samples.length / 3);
    expect(start.samples[5000]).toBe(whole.samples[5000]);
  });

  it('decodes a stereo MP3 behind an ID3 tag, whatever the name and type claim', async () => {
    const left = tone(150, 44_100, 1);
    const right = tone(150, 44_100, 1, 0.1);
    const file = Buffer.concat([id3Tag(300), await mp3([left, right], 44_100)]);
    const out = await decodeSample(file, 'recording.wav', 'audio/wav');
    expect(out.sampleRate).toBe(44_100);
    expect(out.samples.length).toBeGreaterThan(40_000);
    const a = analyzeSpeech(out.samples, out.sampleRate);
    expect(a.f0Hz).toBeCloseTo(150, -1);
    // The mean of a 0.3 and a 0.1 tone: -13.5 dBFS for the 0.2-amplitude mixture (not the louder channel).
    expect(a.rmsDb).toBeLessThan(analyzeSpeech(left, 44_100).rmsDb - 2.5);
  });

  it('recognises a WAV sent as application/octet-stream with a .mp3 name', async () => {
    const out = await decodeSample(wav16(tone(120, 8000, 0.8), 8000), 'clip.mp3', 'application/octet-stream');
    expect(out.sampleRate).toBe(8000);
  });

  it.each([
    ['plain text', Buffer.from('this is not audio at all, just text'), 'notes.txt', 'text/plain'],
    ['nothing', Buffer.alloc(0), 'empty.wav', 'audio/wav'],
    [
      'an Ogg file',
      Buffer.concat([Buffer.from('OggS\x00\x02', 'latin1'), Buffer.alloc(200)]),
      'a.ogg',
      'audio/ogg',
    ],
    [
      'a FLAC file',
      Buffer.concat([Buffer.from('fLaC\x00\x00\x00\x22', 'latin1'), Buffer.alloc(200)]),
      'a.flac',
      'audio/flac',
    ],
    // One plausible MPEG header and nothing a frame later: chance, not an MP3.
    [
      'bytes that start like an MPEG frame',
      Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x00]), Buffer.alloc(2000)]),
      'x.mp3',
      '',
    ],
  ])('rejects %s as an unsupported type', async (_name, buf, filename, mimeType) => {
    const error = await rejection(decodeSample(buf, filename, mimeType));
    expect(error.message).toContain(`file "${filename}"`);
    expect(error.message).toContain('unsupported audio type; send WAV or MP3');
  });

  it('rejects a WAV in an encoding it does not decode, keeping the parser error as the cause', async () => {
    const wav = wavHeader({ sampleRate: 8000, channels: 1, bitsPerSample: 16, dataBytes: 8000 });
    wav.writeUInt16LE(6, 20); // A-law
    const error = await rejection(
      decodeSample(Buffer.concat([wav, Buffer.alloc(8000)]), 'alaw.wav', 'audio/wav'),
    );
    expect(error.message).toMatch(/^file "alaw.wav": WAV encoding 0x0006 .* not supported/);
    expect(error.cause).toBeInstanceOf(WavFormatError);
  });

  it('rejects audio that is too short, empty or silent, each with its own message', async () => {
    expect(
      (await rejection(decodeSample(wav16(tone(150, 16_000, 0.3), 16_000), 'short.wav', 'audio/wav')))
        .message,
    ).toBe('file "short.wav": 0.30 s of audio is too short; each sample needs at least 0.5 s of speech');
    expect(
      (await rejection(decodeSample(wav16(new Float32Array(0), 16_000), 'empty.wav', ''))).message,
    ).toMatch(/too short/);
    expect(
      (await rejection(decodeSample(wav16(new Float32Array(16_000), 16_000), 'quiet.wav', ''))).message,
    ).toBe('file "quiet.wav": the audio is silent; record some speech');
  });

  it('rejects sample rates too low to measure a voice in', async () => {
    const error = await rejection(decodeSample(wav16(tone(150, 4000, 1), 4000), 'old.wav', 'audio/wav'));
    expect(error.message).toMatch(/4000 Hz is not supported/);
  });
});
