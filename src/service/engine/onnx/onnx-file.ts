/**
 * What an `.onnx` file says about itself, read without a runtime: its metadata (ModelProto's
 * `metadata_props`) and the names of its graph's inputs and outputs, in order. sherpa-onnx reads both
 * to decide how to run a model, and ends the whole process (`_Exit`) when a key it needs is missing:
 * the engine checks them here first. Only the protobuf framing is walked; the weights are skipped.
 */

export interface OnnxFileInfo {
  readonly metadata: ReadonlyMap<string, string>;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

export class OnnxFileError extends Error {
  override readonly name = 'OnnxFileError';
}

// onnx.proto field numbers.
const MODEL_GRAPH = 7;
const MODEL_METADATA = 14;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const VALUE_INFO_NAME = 1;
const TENSOR_NAME = 8;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

/** The fields of one message: each length-delimited field's bytes, by field number, in order. */
function fields(bytes: Uint8Array, wanted: ReadonlySet<number>): Array<[number, Uint8Array]> {
  const out: Array<[number, Uint8Array]> = [];
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (at >= bytes.length) throw new OnnxFileError('truncated varint');
      const b = bytes[at++]!;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new OnnxFileError('varint longer than 10 bytes');
  };
  while (at < bytes.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === WIRE_VARINT) varint();
    else if (wire === WIRE_FIXED64) at += 8;
    else if (wire === WIRE_FIXED32) at += 4;
    else if (wire === WIRE_BYTES) {
      const length = varint();
      if (at + length > bytes.length) throw new OnnxFileError('a field runs past the end of its message');
      if (wanted.has(field)) out.push([field, bytes.subarray(at, at + length)]);
      at += length;
    } else throw new OnnxFileError(`unknown wire type ${wire}: not an ONNX model`);
    if (at > bytes.length) throw new OnnxFileError('truncated field');
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

function stringField(message: Uint8Array, field: number): string | undefined {
  const found = fields(message, new Set([field]));
  return found.length > 0 ? utf8.decode(found[found.length - 1]![1]) : undefined;
}

/** Reads the metadata and the graph's inputs and outputs of an ONNX model's bytes. */
export function readOnnxInfo(bytes: Uint8Array): OnnxFileInfo {
  const metadata = new Map<string, string>();
  let graph: Uint8Array | undefined;
  for (const [field, value] of fields(bytes, new Set([MODEL_GRAPH, MODEL_METADATA]))) {
    if (field === MODEL_GRAPH) graph = value;
    else {
      const key = stringField(value, ENTRY_KEY);
      if (key !== undefined) metadata.set(key, stringField(value, ENTRY_VALUE) ?? '');
    }
  }
  if (!graph) throw new OnnxFileError('the file has no graph: not an ONNX model');
  const inputs: string[] = [];
  const outputs: string[] = [];
  const initializers = new Set<string>();
  for (const [field, value] of fields(graph, new Set([GRAPH_INITIALIZER, GRAPH_INPUT, GRAPH_OUTPUT]))) {
    if (field === GRAPH_INITIALIZER) initializers.add(stringField(value, TENSOR_NAME) ?? '');
    else (field === GRAPH_INPUT ? inputs : outputs).push(stringField(value, VALUE_INFO_NAME) ?? '');
  }
  // Models of IR version 3 list their weights among the inputs too: the runtime feeds only the others.
  return { metadata, inputs: inputs.filter((name) => !initializers.has(name)), outputs };
}
