/**
 * One call from the terminal: the gateway's end of a Twilio media stream, the bot's audio played at
 * real time (to a player, to a recording), the caller's audio (silence, or the microphone), keys
 * pressed, and the hang-up, whichever side does it.
 */
import { FRAME_MS } from '../audio/framer.js';
import { decodeMulaw, MULAW_SILENCE } from '../audio/g711.js';
import { int16ToBytes } from '../audio/pcm.js';
import { wavHeader } from '../audio/wav.js';
import { CliError, type Env } from './args.js';
import { WavRecorder } from './audio-file.js';
import { Keyboard, type KeyAction } from './keyboard.js';
import { findPlayer, micCommand, Microphone, NO_PLAYER_HINT, Player, type PlayerCommand } from './player.js';
import { Playout } from './playout.js';
import { twilioSid } from '../protocols/twilio-caller.js';
import { TwilioGateway } from './twilio-gateway.js';

export interface SoftphoneOptions {
  url: string;
  token: string | undefined;
  callSid: string;
  parameters: Record<string, string>;
  record: string | undefined;
  play: boolean;
  mic: boolean;
  /** Pressed once the bot has been quiet for `PROMPT_END_QUIET_MS` after speaking. */
  digits: string;
  hangupAfterMs: number | undefined;
  env: Env;
  /** A line for the person at the terminal. */
  log: (line: string) => void;
}

export interface CallSummary {
  /** Who ended it and how. */
  reason: string;
  durationMs: number;
  botAudioMs: number;
}

/** The bot counts as done with its prompt after this much quiet. */
export const PROMPT_END_QUIET_MS = 1000;
/** Between two keys of `--digits`. */
export const DIGIT_SPACING_MS = 250;
const SAMPLE_RATE = 8000;
const BYTES_PER_MS = SAMPLE_RATE / 1000;
/** 20 ms of mu-law: one Twilio media message. */
const FRAME_BYTES = FRAME_MS * BYTES_PER_MS;
const PLAYER_END_WAIT_MS = 3000;
/** 2 s of 16-bit 8 kHz audio: a player further behind than that loses audio rather than lag more. */
const PLAYER_MAX_BEHIND_BYTES = 32_000;

type Ending = { by: 'caller' | 'bot' } | { by: 'error'; error: CliError };

class Call {
  readonly #o: SoftphoneOptions;
  readonly #gateway: TwilioGateway;
  readonly #playout: Playout;
  readonly #recorder: WavRecorder | undefined;
  readonly #player: Player | undefined;
  readonly #timers: NodeJS.Timeout[] = [];
  #keyboard: Keyboard | undefined;
  #mic: Microphone | undefined;
  #micBuffer = Buffer.alloc(0);
  #silence: NodeJS.Timeout | undefined;
  #playerWarned = false;
  #hangingUp = false;
  #startedAt = 0;
  readonly #ended: Promise<Ending>;
  #end: (ending: Ending) => void = () => undefined;

  constructor(
    o: SoftphoneOptions,
    gateway: TwilioGateway,
    recorder: WavRecorder | undefined,
    player: Player | undefined,
  ) {
    this.#o = o;
    this.#gateway = gateway;
    this.#recorder = recorder;
    this.#player = player;
    this.#ended = new Promise((resolve) => (this.#end = resolve));
    this.#playout = new Playout({
      bytesPerMs: BYTES_PER_MS,
      silence: MULAW_SILENCE,
      onPlay: (bytes) => this.#played(bytes),
      onMark: (name) => gateway.returnMark(name),
    });
    gateway.on('media', (bytes) => this.#playout.audio(bytes));
    gateway.on('mark', (name) => this.#playout.mark(name));
    gateway.on('clear', () => this.#playout.clear());
    const onClosed = (code: number, reason: string): void => {
      if (this.#hangingUp) this.#end({ by: 'caller' });
      else if (code === 1000 || code === 1005) this.#end({ by: 'bot' });
      else
        this.#end({
          by: 'error',
          error: new CliError(`the server closed the call: ${code}${reason ? ` ${reason}` : ''}`),
        });
    };
    gateway.on('closed', onClosed);
    if (gateway.closeInfo) onClosed(gateway.closeInfo.code, gateway.closeInfo.reason);
    player?.feed(wavHeader({ sampleRate: SAMPLE_RATE, channels: 1, bitsPerSample: 16 }), Infinity);
  }

  /** Runs the call until one side hangs up. */
  async run(micCmd: PlayerCommand | undefined): Promise<CallSummary> {
    this.#gateway.start();
    this.#startedAt = performance.now();
    this.#playout.start();
    if (micCmd) this.#startMic(micCmd);
    else this.#startSilence();
    this.#keyboard = Keyboard.start(process.stdin, (action) => this.#onKey(action));
    if (this.#o.digits !== '') this.#pressWhenPromptEnds(this.#o.digits);
    if (this.#o.hangupAfterMs !== undefined) this.#after(this.#o.hangupAfterMs, () => void this.hangup());
    const ending = await this.#ended;
    const durationMs = performance.now() - this.#startedAt;
    await this.#finish();
    if (ending.by === 'error') throw ending.error;
    return {
      reason: ending.by === 'caller' ? 'you hung up' : 'the bot hung up',
      durationMs,
      botAudioMs: this.#playout.audioPlayedMs,
    };
  }

  async hangup(): Promise<void> {
    if (this.#hangingUp) return;
    this.#hangingUp = true;
    await this.#gateway.hangup();
  }

  #played(mulaw: Uint8Array): void {
    const pcm = int16ToBytes(decodeMulaw(mulaw));
    this.#recorder?.write(pcm);
    const player = this.#player;
    if (!player) return;
    if (player.alive) {
      player.feed(pcm, PLAYER_MAX_BEHIND_BYTES);
    } else if (!this.#playerWarned) {
      this.#playerWarned = true;
      this.#o.log(`${player.name} stopped (${player.describeFailure()}); the call goes on without sound`);
    }
  }

  #onKey(action: KeyAction): void {
    if (action.type === 'hangup') void this.hangup();
    else this.#press(action.digit);
  }

  #press(digit: string): void {
    if (this.#hangingUp) return;
    this.#gateway.dtmf(digit);
    this.#o.log(`pressed ${digit}`);
  }

  /** `--digits`: once the bot has spoken and then been quiet (its prompt is over), one key at a time. */
  #pressWhenPromptEnds(digits: string): void {
    const poll = setInterval(() => {
      if (this.#playout.quietForMs() < PROMPT_END_QUIET_MS) return;
      clearInterval(poll);
      [...digits].forEach((digit, i) => this.#after(i * DIGIT_SPACING_MS, () => this.#press(digit)));
    }, 50);
    this.#timers.push(poll);
  }

  #startSilence(): void {
    const frame = new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
    const startedAt = performance.now();
    let sent = 0;
    // Whole frames due by the clock, so a late timer catches up instead of drifting.
    this.#silence = setInterval(() => {
      const due = Math.floor((performance.now() - startedAt) / FRAME_MS);
      for (; sent < due; sent++) this.#gateway.sendAudio(frame);
    }, FRAME_MS);
  }

  #startMic(command: PlayerCommand): void {
    this.#mic = new Microphone(
      command,
      (bytes) => {
        this.#micBuffer = Buffer.concat([this.#micBuffer, bytes]);
        let offset = 0;
        for (; offset + FRAME_BYTES <= this.#micBuffer.length; offset += FRAME_BYTES)
          this.#gateway.sendAudio(this.#micBuffer.subarray(offset, offset + FRAME_BYTES));
        this.#micBuffer = this.#micBuffer.subarray(offset);
      },
      (why) => {
        if (this.#hangingUp || this.#mic === undefined) return;
        this.#mic = undefined;
        this.#o.log(`the microphone stopped (${why}); sending silence`);
        this.#startSilence();
      },
    );
  }

  #after(ms: number, fn: () => void): void {
    this.#timers.push(setTimeout(fn, ms));
  }

  async #finish(): Promise<void> {
    this.#playout.tick();
    this.#playout.stop();
    for (const t of this.#timers) clearTimeout(t);
    clearInterval(this.#silence);
    this.#mic?.stop();
    this.#mic = undefined;
    this.#keyboard?.stop();
    await this.#gateway.closed();
    const player = this.#player;
    if (player) {
      // What it still holds plays out; a player that hangs is stopped.
      const stop = setTimeout(() => player.stop(), PLAYER_END_WAIT_MS);
      await player.end().catch(() => undefined);
      clearTimeout(stop);
    }
    await this.#recorder?.close();
  }
}

/** Finds what the options need on this machine before anything connects. */
function prepare(o: SoftphoneOptions): { player: PlayerCommand | undefined; mic: PlayerCommand | undefined } {
  let mic: PlayerCommand | undefined;
  if (o.mic) {
    mic = micCommand(o.env);
    if (!mic) throw new CliError("--mic needs sox's `rec` on PATH (e.g. `sudo apt-get install sox`)");
  }
  let player: PlayerCommand | undefined;
  if (o.play) {
    player = findPlayer('wav', o.env);
    if (!player)
      o.log(
        `no audio player found, so you will not hear the bot (${NO_PLAYER_HINT})` +
          (o.record ? `; recording to ${o.record}` : '; --record FILE keeps what it says'),
      );
  }
  return { player, mic };
}

export async function runSoftphone(o: SoftphoneOptions): Promise<CallSummary> {
  const found = prepare(o);
  const gateway = await TwilioGateway.connect({
    url: o.url,
    token: o.token,
    callSid: o.callSid,
    streamSid: twilioSid('MZ'),
    parameters: o.parameters,
  });
  let recorder: WavRecorder | undefined;
  if (o.record !== undefined) {
    try {
      recorder = await WavRecorder.create(o.record, SAMPLE_RATE);
    } catch (error) {
      await gateway.hangup();
      throw new CliError(`cannot write ${o.record}: ${(error as Error).message}`);
    }
  }
  const player = found.player ? new Player(found.player) : undefined;
  const call = new Call(o, gateway, recorder, player);
  const onSignal = (): void => void call.hangup();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await call.run(found.mic);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
