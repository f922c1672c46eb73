/** The part of the eSpeak-NG WASM build (GPL-3.0, optional dependency) that the local service uses. */
declare module '@echogarden/espeak-ng-emscripten' {
  export interface ESpeakEvent {
    readonly type?: string;
  }
  export interface ESpeakNGWorker {
    rate: number;
    pitch: number;
    range: number;
    set_voice(name: string): void;
    /** Calls back with ~100 ms of Int16 audio at 22 050 Hz; returning true stops synthesis. */
    synthesize(text: string, callback: (samples: Int16Array, events: unknown) => boolean | void): void;
    get_samplerate(): number;
    list_voices(): Array<{ name: string; identifier: string }>;
  }
  export interface ESpeakModule {
    eSpeakNGWorker: new () => ESpeakNGWorker;
  }
  const Init: () => Promise<ESpeakModule>;
  export default Init;
}
