/**
 * A spoken phone menu for judging the recogniser: eight choices with synonyms, callers' answers with
 * carrier words ("I'd like to…", "please", "um"), sentences the menu does not hold, and speech for them
 * from the local speech service (the cast's built-in voices, with its character timings) or straight
 * from eSpeak (testkit/vad-audio.ts's voices). Shared by the recognition tests and bench/menus.ts.
 */
import type { MenuChoice } from '../src/recognition/grammar.js';
import { espeakSpeech } from './audio.js';
import type { TestVoice } from './vad-audio.js';

export const MENU: readonly MenuChoice[] = [
  { key: 'billing', phrases: ['billing', 'pay my bill', 'payments'] },
  { key: 'support', phrases: ['technical support', 'tech support', 'support'] },
  { key: 'sales', phrases: ['sales', 'buy something', 'a new order'] },
  { key: 'agent', phrases: ['an agent', 'a representative', 'a real person', 'an operator'] },
  { key: 'balance', phrases: ['my balance', 'my account balance', 'account balance', 'balance'] },
  { key: 'cancel', phrases: ['cancel my order', 'cancel', 'cancellation'] },
  { key: 'hours', phrases: ['opening hours', 'hours', 'when are you open'] },
  { key: 'repeat', phrases: ['repeat', 'repeat that', 'say that again'] },
];

/** Three answers a choice, each as a caller might say it: [key, text]. */
export const ANSWERS: ReadonlyArray<readonly [key: string, text: string]> = [
  ['billing', 'Billing.'],
  ['billing', "I'd like to pay my bill, please."],
  ['billing', 'Um, payments.'],
  ['support', 'Technical support.'],
  ['support', 'I need tech support.'],
  ['support', 'Can I talk to support, please?'],
  ['sales', 'Sales.'],
  ['sales', 'I want to buy something.'],
  ['sales', 'Talk to sales.'],
  ['agent', 'An agent, please.'],
  ['agent', 'I want to speak to a representative.'],
  ['agent', 'A real person.'],
  ['balance', 'My balance.'],
  ['balance', 'Can I check my account balance?'],
  ['balance', 'Balance, please.'],
  ['cancel', 'Cancel my order.'],
  ['cancel', "I'd like to cancel."],
  ['cancel', 'Cancellation.'],
  ['hours', 'Opening hours.'],
  ['hours', 'When are you open?'],
  ['hours', 'Hours, please.'],
  ['repeat', 'Repeat that.'],
  ['repeat', 'Say that again, please.'],
  ['repeat', 'Um, repeat.'],
];

/** What callers say that the menu does not hold. */
export const OUT_OF_GRAMMAR: readonly string[] = [
  'The weather is nice today.',
  'What time is it?',
  'I lost my credit card.',
  'Hello, is anybody there?',
  'Where is the nearest station?',
  'I need a doctor.',
  'My dog ate my homework.',
  'How much does it cost?',
  'Can you call me back tomorrow?',
  'Is this the right number?',
  'I am not sure yet.',
  'The kids are at school.',
];

/** Longer sentences to align, as a bot says them. */
export const BOT_SENTENCES: readonly string[] = [
  'Thank you for calling. Your table for two is booked for eight tonight, and we will send a confirmation by text message.',
  'I am sorry, the billing department is closed right now. Please call again tomorrow morning between nine and five.',
  'Your order has been shipped and should arrive on Thursday. Is there anything else I can help you with today?',
  'To hear these options again, say repeat. To speak to a representative, stay on the line.',
];

/** eSpeak straight from the engine (22 050 Hz). */
export const ESPEAK_RATE = 22_050;

export function espeakAnswer(text: string, voice: TestVoice): Promise<Int16Array> {
  return espeakSpeech(text, voice[0], voice[1], voice[2]);
}

/** Speech of the local service's `/with-timestamps` (pcm_24000) with its character end times (ms). */
export interface TimedSpeech {
  readonly samples: Int16Array;
  readonly sampleRate: 24_000;
  readonly characters: readonly string[];
  readonly charStartMs: readonly number[];
  readonly charEndMs: readonly number[];
}

/** `text` in `voiceId` from the local service at `apiBase` (…/api/speech), with its character timings. */
export async function serviceSpeech(
  apiBase: string,
  apiKey: string,
  voiceId: string,
  text: string,
): Promise<TimedSpeech> {
  const res = await fetch(`${apiBase}/v1/text-to-speech/${voiceId}/with-timestamps?output_format=pcm_24000`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'xi-api-key': apiKey },
    body: JSON.stringify({ text }),
  });
  if (!res.ok) throw new Error(`the speech service answered ${res.status}: ${await res.text()}`);
  const body = (await res.json()) as {
    audio_base64: string;
    alignment: {
      characters: string[];
      character_start_times_seconds: number[];
      character_end_times_seconds: number[];
    };
  };
  const bytes = Buffer.from(body.audio_base64, 'base64');
  const samples = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(2 * i);
  return {
    samples,
    sampleRate: 24_000,
    characters: body.alignment.characters,
    charStartMs: body.alignment.character_start_times_seconds.map((s) => s * 1000),
    charEndMs: body.alignment.character_end_times_seconds.map((s) => s * 1000),
  };
}
