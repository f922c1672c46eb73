/**
 * Builds an ONNX graph node by node (`proto.ts` writes it): each op returns the name of its output, so
 * a graph reads like the computation it is. Weights are random (seeded), scaled by their fan-in so
 * activations stay in range (no overflow, no denormals to slow the runtime down).
 */
import { seeded } from '../random.js';
import {
  DataType,
  encodeModel,
  type AttributeValue,
  type Node,
  type Tensor,
  type ValueInfo,
} from './proto.js';

export class GraphBuilder {
  readonly nodes: Node[] = [];
  readonly initializers: Tensor[] = [];
  readonly #random: () => number;
  #count = 0;
  /** Weights (floats) so far: the model's parameter count. */
  parameters = 0;

  constructor(seed = 1) {
    this.#random = seeded(seed);
  }

  #name(prefix: string): string {
    return `${prefix}_${this.#count++}`;
  }

  /** A float weight of `dims`, uniform in ±scale (default 1/√fan-in, fan-in = all dims but the first). */
  weight(dims: readonly number[], scale?: number): string {
    const n = dims.reduce((a, b) => a * b, 1);
    const fanIn = n / dims[0]!;
    const s = scale ?? 1 / Math.sqrt(Math.max(1, fanIn));
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = (this.#random() * 2 - 1) * s;
    this.parameters += n;
    return this.tensor(dims, data);
  }

  /** A float constant. */
  floats(dims: readonly number[], values: readonly number[]): string {
    return this.tensor(dims, Float32Array.from(values));
  }

  /** An int64 constant (a shape, an index). */
  int64s(dims: readonly number[], values: readonly number[]): string {
    return this.tensor(
      dims,
      BigInt64Array.from(values, (v) => BigInt(v)),
    );
  }

  tensor(dims: readonly number[], data: Float32Array | BigInt64Array): string {
    const name = this.#name('w');
    const type = data instanceof Float32Array ? DataType.FLOAT : DataType.INT64;
    this.initializers.push({ name, dims, type, data });
    return name;
  }

  op(op: string, inputs: readonly string[], attributes?: Record<string, AttributeValue>): string {
    const output = this.#name(op.toLowerCase());
    this.nodes.push({ op, inputs, outputs: [output], name: output, ...(attributes ? { attributes } : {}) });
    return output;
  }

  /** The last op's output renamed: a graph output must be produced under its own name. */
  rename(from: string, to: string): void {
    const node = this.nodes.find((n) => n.outputs.includes(from));
    if (!node) throw new Error(`no node produces ${from}`);
    this.nodes[this.nodes.indexOf(node)] = {
      ...node,
      outputs: node.outputs.map((o) => (o === from ? to : o)),
    };
  }

  encode(
    inputs: readonly ValueInfo[],
    outputs: readonly ValueInfo[],
    metadata: Record<string, string>,
  ): Uint8Array {
    return encodeModel({ nodes: this.nodes, initializers: this.initializers, inputs, outputs, metadata });
  }
}
