/**
 * Debian's Chromium (installed by scripts/install-tools.sh), headless, driven by playwright-core, with
 * a fake microphone that plays a WAV file in a loop. Used by the browser phone's end-to-end test and
 * its benchmark.
 */
import { writeFile } from 'node:fs/promises';
import { chromium, type Browser } from 'playwright-core';
import { espeakSpeech, wavFile } from './audio.js';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** What a caller says into the fake microphone: a pause between two hellos, then longer speech. */
export const CALLER_SPEECH =
  'Hello, hello, can you hear me? I would like to talk to somebody about my account, please. ' +
  'Wait a moment, please.';

/** Writes CALLER_SPEECH (the embedded eSpeak engine, 22 050 Hz) as a WAV file for the fake microphone. */
export async function writeCallerSpeech(path: string): Promise<void> {
  await writeFile(path, wavFile(await espeakSpeech(CALLER_SPEECH, 'en-us', 50, 160), 22_050));
}

export async function launchChromium(microphoneWav: string): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      // As root in a sandboxless container, on a machine with no network beyond loopback.
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // A microphone that plays the WAV, granted without a prompt.
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${microphoneWav}`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
}
