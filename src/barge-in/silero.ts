/**
 * Silero VAD v5 (MIT), run with ONNX Runtime on one thread: natively with `onnxruntime-node` when it
 * is installed and loads (an optional dependency: 2–2.5× faster per window, the same probabilities), or
 * else with onnxruntime-web's WASM backend, which needs no native code (the fallback is logged once).
 * onnxruntime-node's install script would download CUDA libraries from NuGet on Linux x64; the
 * project's `.npmrc` skips that (`onnxruntime-node-install=skip`), as the CPU build inside the npm
 * package is all that runs here (docs/calls.md, _Barge-in_, has the figures). The model file ships
 * inside `@ricky0123/vad-web` (ISC; the model MIT) and is read from node_modules: nothing is fetched
 * at run time.
 *
 * One `SileroModel` per thread: the main thread's (`SileroModel.load`), or each VAD worker's, where
 * whole detectors run (`startVadWorkers`, pool.ts); each call gets a `SileroStream` with its own
 * recurrent state and context. v5 needs each window prefixed with the previous window's last samples (32 at 8 kHz, 64 at
 * 16 kHz): without that context its recall at 8 kHz collapses.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-web';
import { EchoEstimator, type EchoVerdict } from './echo.js';
import type { VadSampleRate } from './sample-rate.js';

export type { VadSampleRate } from './sample-rate.js';

/** Samples per window and of context before it, per rate (Silero v5's fixed sizes). */
const WINDOW: Readonly<Record<VadSampleRate, { samples: number; context: number }>> = {
  8000: { samples: 256, context: 32 },
  16_000: { samples: 512, context: 64 },
};
const STATE_SHAPE = [2, 1, 128];
const STATE_SIZE = 2 * 1 * 128;
const INT16_SCALE = 1 / 32768;
/** Inferences run at load, so that the first calls do not pay for V8's tier-up. */
const WARMUP_WINDOWS = 200;

/** What both runtimes share (onnxruntime-common's API). */
type Ort = Pick<typeof import('onnxruntime-web'), 'Tensor' | 'InferenceSession'>;

/** What is logged, once, when Silero runs on WASM because the native runtime did not load. */
export const WASM_FALLBACK_LOG =
  'voice activity runs on WebAssembly: the native ONNX Runtime did not load (slower, same results)';

/** The native runtime, an optional dependency (imported by name: it may not be installed). */
export const NATIVE_ORT_PACKAGE = 'onnxruntime-node';

/**
 * Which runtime runs Silero: `auto` (the default) the native one when it loads, else WASM; `wasm`
 * always WASM; `native` the native one or an error (tests, benchmarks).
 */
export type SileroBackend = 'auto' | 'native' | 'wasm';

export interface SileroSessionOptions {
  /** Default `auto`. */
  backend?: SileroBackend;
  /** @internal the native package's name (a test names one that is not there). */
  nativePackage?: string;
}

interface LoadedRuntime {
  ort: Ort;
  session: InferenceSession;
  runtime: string;
}

/**
 * onnxruntime-node on one thread: the process has other work, calls run their windows one after
 * another anyway, and an intra-op pool of its own would spin on the cores between runs.
 */
async function loadNative(model: Uint8Array, name: string): Promise<LoadedRuntime> {
  const ort = (await import(name)) as Ort & { env: { versions: Record<string, string | undefined> } };
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  return { ort, session, runtime: `onnxruntime-node ${ort.env.versions['node'] ?? '?'} (native, 1 thread)` };
}

async function loadWasm(model: Uint8Array): Promise<LoadedRuntime> {
  const ort = await import('onnxruntime-web');
  // One thread: the process has other work, and calls run their windows one after another anyway.
  ort.env.wasm.numThreads = 1;
  const session = await ort.InferenceSession.create(model);
  return { ort, session, runtime: `onnxruntime-web ${ort.env.versions.web ?? '?'} (WASM, 1 thread)` };
}

/** Where the model file is: beside `@ricky0123/vad-web`'s main file (the package has no exports map). */
export function sileroModelPath(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@ricky0123/vad-web')), 'silero_vad_v5.onnx');
}

/**
 * What runs the calls' echo estimation (echo.ts). Unlike Silero's, an estimator's state (the echo
 * path's delay and gain, tracked over the last second or so) stays where it runs: each stream's
 * `EchoEstimator` is created on the stream's first window and its windows must all go to it, in order.
 */
export interface EchoRunner {
  /**
   * One window of `stream`'s inbound audio and the bot's reference for the same span, which moved by
   * `moved` samples within it (`EchoEstimator.process`). The arrays are handed over: the caller must
   * not change them afterwards.
   */
  echo(
    stream: number,
    inbound: Int16Array,
    reference: Int16Array,
    sampleRate: VadSampleRate,
    moved: number,
  ): Promise<EchoVerdict>;
  /** Frees `stream`'s estimator once the windows already given have been run; none follow. */
  closeEcho(stream: number): void;
}

/** What runs Silero's windows and the echo estimation: the thread's `SileroSession`. */
export interface SileroRunner extends EchoRunner {
  /** What runs the model, for logs and benchmarks. */
  readonly runtime: string;
  /** Why the native runtime is not the one running (it was wanted and did not load), for a log. */
  readonly fallback?: string | undefined;
  /** One window with its context; the speech probability and the next state. */
  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult>;
}

export interface SileroResult {
  p: number;
  state: Float32Array;
}

/** One onnxruntime session in this thread (the main one, or a VAD worker's). */
export class SileroSession implements SileroRunner {
  readonly runtime: string;
  readonly fallback: string | undefined;
  /**
   * Runs are serialised: one WASM instance, one inference at a time (concurrent `run()`s with separate
   * state tensors gain nothing).
   */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly rates = new Map<VadSampleRate, Tensor>();
  private warmedUp = 0;
  /** The echo estimators of the streams run here, created on a stream's first window. */
  private readonly estimators = new Map<number, EchoEstimator>();

  private readonly ort: Ort;
  private readonly session: InferenceSession;

  private constructor(loaded: LoadedRuntime, fallback: string | undefined) {
    this.ort = loaded.ort;
    this.session = loaded.session;
    this.runtime = loaded.runtime;
    this.fallback = fallback;
  }

  /** Loads the model on the runtime `options.backend` says (see `SileroBackend`) and runs it a little (see `warmUp`). */
  static async create(
    warmupWindows = WARMUP_WINDOWS,
    options: SileroSessionOptions = {},
  ): Promise<SileroSession> {
    const backend = options.backend ?? 'auto';
    const model = await readFile(sileroModelPath());
    const nativePackage = options.nativePackage ?? NATIVE_ORT_PACKAGE;
    let fallback: string | undefined;
    if (backend !== 'wasm') {
      try {
        // Loaded and run: a runtime that loads but cannot infer falls back here, not call by call.
        const session = new SileroSession(await loadNative(model, nativePackage), undefined);
        await session.warmUp(Math.max(1, warmupWindows));
        return session;
      } catch (error) {
        if (backend === 'native') throw error;
        fallback = `${nativePackage} did not load: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
    const session = new SileroSession(await loadWasm(model), fallback);
    await session.warmUp(warmupWindows);
    return session;
  }

  /**
   * Runs the model on `windows` windows of a tone, less those it already ran. V8 compiles the WASM
   * engine's hot code in the background after its first runs, and until then an inference costs
   * several times more.
   */
  async warmUp(windows: number): Promise<void> {
    const { samples, context } = WINDOW[8000];
    let state: Float32Array = new Float32Array(STATE_SIZE);
    const input = new Float32Array(context + samples);
    for (; this.warmedUp < windows; this.warmedUp++) {
      for (let j = 0; j < input.length; j++) input[j] = 0.03 * Math.sin(this.warmedUp + j / 7);
      state = (await this.run(input, state, 8000)).state;
    }
  }

  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult> {
    const { ort, session } = this;
    let sr = this.rates.get(sampleRate);
    if (!sr) {
      sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(sampleRate)]), []);
      this.rates.set(sampleRate, sr);
    }
    const feeds: Record<string, Tensor> = {
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', state, STATE_SHAPE),
      sr,
    };
    const next = this.chain.then(async () => {
      const out = await session.run(feeds);
      const p = (out['output']!.data as Float32Array)[0]!;
      return { p, state: out['stateN']!.data as Float32Array };
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  echo(
    stream: number,
    inbound: Int16Array,
    reference: Int16Array,
    sampleRate: VadSampleRate,
    moved: number,
  ): Promise<EchoVerdict> {
    try {
      let estimator = this.estimators.get(stream);
      if (!estimator) {
        estimator = new EchoEstimator(sampleRate);
        this.estimators.set(stream, estimator);
      }
      return Promise.resolve(estimator.process(inbound, reference, moved));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  closeEcho(stream: number): void {
    this.estimators.delete(stream);
  }

  /** Echo estimators held, for diagnostics. */
  get echoStreams(): number {
    return this.estimators.size;
  }
}

/** Silero for every call of a process: hands each call a `SileroStream`, runs windows on its runner. */
export class SileroModel {
  /** Echo stream ids, unique per runner as long as one model serves it (as `load` and the pool do). */
  private nextEchoStream = 1;

  constructor(private readonly runner: SileroRunner) {}

  /** What runs the model, for logs and benchmarks. */
  get runtime(): string {
    return this.runner.runtime;
  }

  /** Why the native runtime is not the one running, when it was wanted (for a log). */
  get fallback(): string | undefined {
    return this.runner.fallback;
  }

  /**
   * The process's in-thread model, loaded on the first call and shared by every later one:
   * one session serves all calls, each with its own `SileroStream`. (`startVadWorkers` runs the calls'
   * detectors off the event loop instead, each worker with a model of its own.)
   */
  static async load(options: { warmupWindows?: number } = {}): Promise<SileroModel> {
    const loading = (SileroModel.shared ??= SileroSession.create(0).then((s) => new SileroModel(s)));
    loading.catch(() => {
      if (SileroModel.shared === loading) SileroModel.shared = undefined;
    });
    const model = await loading;
    await (model.runner as SileroSession).warmUp(options.warmupWindows ?? WARMUP_WINDOWS);
    return model;
  }

  private static shared: Promise<SileroModel> | undefined;

  stream(sampleRate: VadSampleRate): SileroStream {
    return new SileroStream(this, sampleRate);
  }

  /** A call's echo estimation, on this model's runner (in a worker: always the same one). */
  echoStream(sampleRate: VadSampleRate): EchoStream {
    return new EchoStream(this.runner, () => this.nextEchoStream++, sampleRate);
  }

  windowSamples(sampleRate: VadSampleRate): number {
    return WINDOW[sampleRate].samples;
  }

  /** @internal one window with its context; returns the speech probability and the next state. */
  run(input: Float32Array, state: Float32Array, sampleRate: VadSampleRate): Promise<SileroResult> {
    return this.runner.run(input, state, sampleRate);
  }
}

/** One call's Silero: windows in order, state carried from one to the next. */
export class SileroStream {
  private state: Float32Array = new Float32Array(STATE_SIZE);
  private readonly input: Float32Array;
  private readonly context: number;
  /** Bumped by reset(), so that an inference in flight does not bring back the old state. */
  private generation = 0;

  constructor(
    private readonly model: SileroModel,
    private readonly sampleRate: VadSampleRate,
  ) {
    const { samples, context } = WINDOW[sampleRate];
    this.context = context;
    this.input = new Float32Array(context + samples);
  }

  get windowSamples(): number {
    return WINDOW[this.sampleRate].samples;
  }

  /** Speech probability of one window (`windowSamples` Int16 samples). */
  async probability(window: Int16Array): Promise<number> {
    const input = this.input;
    // The context: the end of the previous window.
    input.copyWithin(0, input.length - this.context);
    for (let i = 0; i < window.length; i++) input[this.context + i] = window[i]! * INT16_SCALE;
    const generation = this.generation;
    const { p, state } = await this.model.run(input.slice(), this.state, this.sampleRate);
    if (generation === this.generation) this.state = state;
    return p;
  }

  /** A fresh start (after a long silence the model re-converges within a few windows). */
  reset(): void {
    this.generation++;
    this.state = new Float32Array(STATE_SIZE);
    this.input.fill(0);
  }
}

/**
 * One call's echo estimation: windows in order, each verdict from an estimator that has seen the
 * call's windows before it. The estimator lives with the runner (in a worker thread, the worker the
 * stream was assigned to), under this stream's id.
 */
export class EchoStream {
  private id: number;
  private closed = false;

  constructor(
    private readonly runner: EchoRunner,
    private readonly allocate: () => number,
    readonly sampleRate: VadSampleRate,
  ) {
    this.id = allocate();
  }

  /** The runner's key for this stream's estimator (it changes on `reset()`), for diagnostics. */
  get streamId(): number {
    return this.id;
  }

  get windowSamples(): number {
    return WINDOW[this.sampleRate].samples;
  }

  /**
   * The verdict on one window of the caller's audio, given the bot's reference for the same span
   * (equal lengths; see echo.ts for how the reference is aligned), and how far the reference moved
   * within it (samples, `EchoEstimator.process`). Windows are estimated in the order given; the arrays
   * are handed over (not to be changed afterwards).
   */
  process(inbound: Int16Array, reference: Int16Array, moved = 0): Promise<EchoVerdict> {
    if (this.closed) return Promise.reject(new Error('echo stream closed'));
    if (inbound.length !== reference.length)
      return Promise.reject(new RangeError('inbound and reference lengths differ'));
    return this.runner.echo(this.id, inbound, reference, this.sampleRate, moved);
  }

  /**
   * A fresh estimator from the next window on (a new echo path: a transfer, a speakerphone). Windows
   * already given are still answered by the old one, which is then freed.
   */
  reset(): void {
    if (this.closed) return;
    this.runner.closeEcho(this.id);
    this.id = this.allocate();
  }

  /** Frees the estimator wherever it lives; `process` refuses windows from now on. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.runner.closeEcho(this.id);
  }
}
