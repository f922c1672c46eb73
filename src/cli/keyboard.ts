/** Key presses on a terminal, one at a time (raw mode), the terminal restored on `stop`. */

export const DTMF_KEYS = /^[0-9*#A-D]$/;
const HANG_UP_KEYS = new Set(['q', 'Q', '\u0003' /* Ctrl-C */, '\u0004' /* Ctrl-D */]);

export type KeyAction = { type: 'dtmf'; digit: string } | { type: 'hangup' };

/** What a key does in a call: a DTMF digit (letters A-D in either case), hang up, or nothing. */
export function keyAction(key: string): KeyAction | undefined {
  if (HANG_UP_KEYS.has(key)) return { type: 'hangup' };
  const digit = key.toUpperCase();
  return DTMF_KEYS.test(digit) ? { type: 'dtmf', digit } : undefined;
}

export class Keyboard {
  readonly #input: NodeJS.ReadStream;
  readonly #onData: (data: Buffer) => void;

  private constructor(input: NodeJS.ReadStream, onKey: (action: KeyAction) => void) {
    this.#input = input;
    this.#onData = (data) => {
      for (const key of data.toString('utf8')) {
        const action = keyAction(key);
        if (action) onKey(action);
      }
    };
    input.setRawMode(true);
    input.on('data', this.#onData);
    input.resume();
  }

  /** Listens to `input` when it is a terminal; undefined otherwise (a script's stdin is left alone). */
  static start(input: NodeJS.ReadStream, onKey: (action: KeyAction) => void): Keyboard | undefined {
    return input.isTTY ? new Keyboard(input, onKey) : undefined;
  }

  stop(): void {
    this.#input.off('data', this.#onData);
    this.#input.setRawMode(false);
    this.#input.pause();
  }
}
