/**
 * An ONNX model written by hand: the few protobuf messages of onnx.proto a graph needs (ModelProto,
 * GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto), encoded with varints and
 * length-delimited fields. Enough to build a model of the right shape with random weights in a test,
 * with no Python and nothing downloaded. Field numbers are onnx.proto's (proto2: repeated scalars are
 * written unpacked, one tag each, which every parser reads).
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

/** A protobuf message being written: fields appended in order. */
export class ProtoWriter {
  readonly #parts: Uint8Array[] = [];
  #length = 0;

  #push(bytes: Uint8Array): void {
    this.#parts.push(bytes);
    this.#length += bytes.length;
  }

  #varint(value: bigint): void {
    // Negative int64 values are written as their 64-bit two's complement (ten bytes).
    let v = BigInt.asUintN(64, value);
    const out: number[] = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    this.#push(Uint8Array.from(out));
  }

  #tag(field: number, wire: number): void {
    this.#varint(BigInt((field << 3) | wire));
  }

  int(field: number, value: number | bigint): this {
    this.#tag(field, WIRE_VARINT);
    this.#varint(BigInt(value));
    return this;
  }

  float(field: number, value: number): this {
    this.#tag(field, WIRE_FIXED32);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.#push(b);
    return this;
  }

  double(field: number, value: number): this {
    this.#tag(field, WIRE_FIXED64);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, value, true);
    this.#push(b);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.#tag(field, WIRE_BYTES);
    this.#varint(BigInt(value.length));
    this.#push(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  message(field: number, value: ProtoWriter): this {
    return this.bytes(field, value.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let at = 0;
    for (const p of this.#parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

/** onnx.proto's TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, INT32: 6, INT64: 7 } as const;
export type DataTypeId = (typeof DataType)[keyof typeof DataType];

/** An initializer (a weight): dims and its raw little-endian data. */
export interface Tensor {
  readonly name: string;
  readonly dims: readonly number[];
  readonly type: DataTypeId;
  readonly data: Float32Array | BigInt64Array | Int32Array;
}

export type AttributeValue =
  | { readonly int: number }
  | { readonly float: number }
  | { readonly ints: readonly number[] }
  | { readonly tensor: Tensor }
  | { readonly string: string };

export interface Node {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly name: string;
  readonly attributes?: Readonly<Record<string, AttributeValue>>;
}

/** A graph input or output: its element type and shape (a number, or a symbolic dimension's name). */
export interface ValueInfo {
  readonly name: string;
  readonly type: DataTypeId;
  readonly shape: ReadonlyArray<number | string>;
}

export interface Model {
  readonly nodes: readonly Node[];
  readonly initializers: readonly Tensor[];
  readonly inputs: readonly ValueInfo[];
  readonly outputs: readonly ValueInfo[];
  readonly metadata: Readonly<Record<string, string>>;
  /** Default opset (ai.onnx) version. */
  readonly opset?: number;
}

function tensorProto(t: Tensor): ProtoWriter {
  const w = new ProtoWriter();
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.type);
  w.string(8, t.name);
  w.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
  return w;
}

// AttributeProto.AttributeType
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_STRING = 3;
const ATTR_TENSOR = 4;
const ATTR_INTS = 7;

function attributeProto(name: string, value: AttributeValue): ProtoWriter {
  const w = new ProtoWriter().string(1, name);
  if ('int' in value) w.int(3, value.int).int(20, ATTR_INT);
  else if ('float' in value) w.float(2, value.float).int(20, ATTR_FLOAT);
  else if ('ints' in value) {
    for (const i of value.ints) w.int(8, i);
    w.int(20, ATTR_INTS);
  } else if ('tensor' in value) w.message(5, tensorProto(value.tensor)).int(20, ATTR_TENSOR);
  else w.string(4, value.string).int(20, ATTR_STRING);
  return w;
}

function valueInfoProto(v: ValueInfo): ProtoWriter {
  const shape = new ProtoWriter();
  for (const d of v.shape) {
    const dim = new ProtoWriter();
    if (typeof d === 'number') dim.int(1, d);
    else dim.string(2, d);
    shape.message(1, dim);
  }
  const tensorType = new ProtoWriter().int(1, v.type).message(2, shape);
  return new ProtoWriter().string(1, v.name).message(2, new ProtoWriter().message(1, tensorType));
}

const IR_VERSION = 8;
const DEFAULT_OPSET = 17;

/** The bytes of a `.onnx` file. */
export function encodeModel(model: Model): Uint8Array {
  const graph = new ProtoWriter();
  for (const n of model.nodes) {
    const node = new ProtoWriter();
    for (const i of n.inputs) node.string(1, i);
    for (const o of n.outputs) node.string(2, o);
    node.string(3, n.name).string(4, n.op);
    for (const [name, value] of Object.entries(n.attributes ?? {}))
      node.message(5, attributeProto(name, value));
    graph.message(1, node);
  }
  graph.string(2, 'graph');
  for (const t of model.initializers) graph.message(5, tensorProto(t));
  for (const i of model.inputs) graph.message(11, valueInfoProto(i));
  for (const o of model.outputs) graph.message(12, valueInfoProto(o));
  const w = new ProtoWriter()
    .int(1, IR_VERSION)
    .string(2, 'voxbridge-testkit')
    .message(7, graph)
    .message(8, new ProtoWriter().string(1, '').int(2, model.opset ?? DEFAULT_OPSET));
  for (const [key, value] of Object.entries(model.metadata))
    w.message(14, new ProtoWriter().string(1, key).string(2, value));
  return w.finish();
}
