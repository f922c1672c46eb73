/**
 * The parts of soundswallower's WebAssembly module that its JavaScript `Decoder` does not wrap, and
 * that the recogniser needs: the best path's segments with their acoustic scores (`seg_iter_prob` is
 * not exported, so the scores are read from the iterator's struct), and FSGs built once and kept
 * (`set_grammar` parses and builds on every call, and a search frees its FSG when replaced).
 *
 * Pinned to soundswallower 0.6.3 (package.json says so exactly): the struct layouts read here are
 * that version's (src/decoder.c, include/soundswallower/search_module.h and fsg_model.h at commit
 * 6e1d580), and `segments()` checks the one it relies on against the exported accessors.
 */
import type { Decoder, SoundSwallowerModule } from 'soundswallower';

/** The module's exported C functions used here (pointers are numbers into its heap). */
export interface NativeModule extends SoundSwallowerModule {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  _decoder_logmath(decoder: number): number;
  _decoder_set_fsg(decoder: number, fsg: number): number;
  _decoder_hyp(decoder: number, outScore: number): number;
  _decoder_seg_iter(decoder: number): number;
  _seg_iter_next(iterator: number): number;
  _seg_iter_frames(iterator: number, outStart: number, outEnd: number): void;
  _seg_iter_word(iterator: number): number;
  _jsgf_parse_string(text: number, parent: number): number;
  _jsgf_get_public_rule(grammar: number): number;
  _jsgf_build_fsg(grammar: number, rule: number, logmath: number, lw: number): number;
  _jsgf_grammar_free(grammar: number): number;
  _fsg_model_free(fsg: number): number;
}

/** The JavaScript `Decoder` holds its C decoder here (not in the package's types). */
export function cDecoder(decoder: Decoder): number {
  const pointer = (decoder as unknown as { cdecoder?: unknown }).cdecoder;
  if (typeof pointer !== 'number' || pointer === 0) throw new Error('soundswallower decoder not created');
  return pointer;
}

/** `seg_iter_t` on wasm32: vt, search, word, sf, ef, ascr, lscr, prob; 4 bytes each. */
const SEG_START = 3;
const SEG_END = 4;
const SEG_ASCR = 5;

export interface Segment {
  /** The dictionary's word (`the(2)` for an alternate pronunciation; `<sil>`, `[NOISE]` for fillers). */
  readonly word: string;
  /** First and last frame (10 ms each), inclusive. */
  readonly startFrame: number;
  readonly endFrame: number;
  /** Acoustic log-likelihood (the module's log base 1.0001, shifted right by 10), relative per frame to the best senone. */
  readonly acousticScore: number;
}

function readString(module: NativeModule, pointer: number): string {
  const heap = module.HEAPU8;
  let end = pointer;
  while (heap[end] !== 0) end++;
  return Buffer.from(heap.buffer, heap.byteOffset + pointer, end - pointer).toString('utf8');
}

/** The best path of the last utterance, word by word (none when no path reached the grammar's end). */
export function segments(module: NativeModule, decoder: Decoder): Segment[] {
  const out: Segment[] = [];
  const frames = module._malloc(8);
  try {
    for (let it = module._decoder_seg_iter(cDecoder(decoder)); it !== 0; it = module._seg_iter_next(it)) {
      module._seg_iter_frames(it, frames, frames + 4);
      const heap = module.HEAP32;
      const base = it >> 2;
      const startFrame = heap[frames >> 2]!;
      const endFrame = heap[(frames >> 2) + 1]!;
      if (heap[base + SEG_START] !== startFrame || heap[base + SEG_END] !== endFrame)
        throw new Error('soundswallower segment layout is not the one expected (0.6.3)');
      out.push({
        word: readString(module, module._seg_iter_word(it)),
        startFrame,
        endFrame,
        acousticScore: heap[base + SEG_ASCR]!,
      });
    }
  } finally {
    module._free(frames);
  }
  return out;
}

/** The best path's total score (acoustic and grammar), or undefined when no path reached the end. */
export function bestScore(module: NativeModule, decoder: Decoder): number | undefined {
  const out = module._malloc(4);
  try {
    const hypothesis = module._decoder_hyp(cDecoder(decoder), out);
    // Without a hypothesis the score is left as it was.
    return hypothesis === 0 ? undefined : module.HEAP32[out >> 2]!;
  } finally {
    module._free(out);
  }
}

/** A C string on the module's heap, for the duration of `use`. */
function withCString<T>(module: NativeModule, text: string, use: (pointer: number) => T): T {
  const bytes = Buffer.from(`${text}\0`, 'utf8');
  const pointer = module._malloc(bytes.length);
  if (pointer === 0) throw new Error('soundswallower is out of memory');
  module.HEAPU8.set(bytes, pointer);
  try {
    return use(pointer);
  } finally {
    module._free(pointer);
  }
}

/** An FSG built from JSGF, as `Decoder.set_grammar` builds it (the grammar's public rule, weight `lw`). */
export function buildFsg(module: NativeModule, decoder: Decoder, jsgf: string, lw: number): number {
  const grammar = withCString(module, jsgf, (text) => module._jsgf_parse_string(text, 0));
  if (grammar === 0) throw new Error('the grammar is not valid JSGF');
  try {
    const rule = module._jsgf_get_public_rule(grammar);
    if (rule === 0) throw new Error('the grammar has no public rule');
    const fsg = module._jsgf_build_fsg(grammar, rule, module._decoder_logmath(cDecoder(decoder)), lw);
    if (fsg === 0) throw new Error('the grammar could not be built');
    return fsg;
  } finally {
    module._jsgf_grammar_free(grammar);
  }
}

/**
 * Makes `fsg` the decoder's search. The search takes one reference and frees it when replaced
 * ("consuming semantics"), so one is added first (`refcount`, the first field of `fsg_model_t`): the
 * caller's own stays, for the next time.
 */
export function useFsg(module: NativeModule, decoder: Decoder, fsg: number): void {
  module.HEAP32[fsg >> 2]!++;
  if (module._decoder_set_fsg(cDecoder(decoder), fsg) < 0) {
    module.HEAP32[fsg >> 2]!--;
    throw new Error('the decoder refused the grammar');
  }
}

/** Drops the caller's reference (the FSG is freed once no search holds it either). */
export function releaseFsg(module: NativeModule, fsg: number): void {
  module._fsg_model_free(fsg);
}
