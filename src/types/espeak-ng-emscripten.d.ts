/** The part of the eSpeak-NG WASM build (GPL-3.0, optional dependency) that the local service uses. */
declare module '@echogarden/espeak-ng-emscripten' {
  /**
   * What eSpeak reports alongside the audio of a callback: `word` (at the word's first phoneme),
   * `sentence`, `end` (a clause or sentence ends, after its pause), `phoneme`, `samplerate`. Positions
   * are 1-based code points of the text given to `synthesize`; `audio_position` is milliseconds from
   * that call's first sample.
   */
  export interface ESpeakEvent {
    readonly type?: string;
    readonly text_position: number;
    /** Code points of the word (for `word` events). */
    readonly word_length: number;
    readonly audio_position: number;
  }
  export interface ESpeakNGWorker {
    rate: number;
    pitch: number;
    range: number;
    set_voice(name: string): void;
    /** Calls back with ~100 ms of Int16 audio at 22 050 Hz; returning true stops synthesis. */
    synthesize(
      text: string,
      callback: (samples: Int16Array, events: readonly ESpeakEvent[]) => boolean | void,
    ): void;
    get_samplerate(): number;
    /** The languages it speaks (`en-gb-scotland`, …); variants (`+m3`, `+whisper`) are not listed. */
    list_voices(): Array<{
      name: string;
      identifier: string;
      languages: Array<{ priority: number; name: string }>;
    }>;
  }
  export interface ESpeakModule {
    eSpeakNGWorker: new () => ESpeakNGWorker;
  }
  const Init: () => Promise<ESpeakModule>;
  export default Init;
}
