/**
 * The layers of docs/architecture.md, enforced: a module imports only from its own folder or from a
 * layer below it. Siblings on one layer do not import each other (the calls adapter does not reach into
 * Discord, the speech service does not reach into the calls), so each can be read, tested and replaced
 * alone. A new top-level folder must be given a layer here before it can import anything. Inside a
 * unit, modules may import one another, but never in a circle: a cycle means two modules that cannot be
 * read (or loaded) one before the other.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/paths.js';

/** Bottom first. Each entry is a unit: a folder (or file) whose modules may import one another. */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['src/paths.ts', 'src/types'],
  ['src/async', 'src/audio', 'src/http'],
  ['src/protocols', 'src/speech', 'src/barge-in', 'src/recognition', 'src/call-control'],
  ['src/speaker'],
  ['src/control', 'src/cluster', 'src/relay'],
  ['src/flows'],
  ['src/service', 'adapters/media-stream', 'adapters/discord'],
  ['src/app', 'src/cli', 'src/index.ts', 'web'],
  ['testkit', 'examples'],
  ['bench', 'test'],
];

const SCANNED = ['src', 'adapters', 'web', 'testkit', 'examples', 'bench', 'test'];

function unitOf(path: string): { unit: string; rank: number } | undefined {
  for (const [rank, units] of LAYERS.entries())
    for (const unit of units) if (path === unit || path.startsWith(`${unit}/`)) return { unit, rank };
  return undefined;
}

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sources(full));
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

interface Edge {
  from: string;
  to: string;
}

function edges(): Edge[] {
  const out: Edge[] = [];
  for (const top of SCANNED)
    for (const file of sources(join(PROJECT_ROOT, top))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const spec = m[1] ?? m[2]!;
        const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
        out.push({ from: relative(PROJECT_ROOT, file), to: relative(PROJECT_ROOT, target) });
      }
    }
  return out;
}

describe('the layers', () => {
  const all = edges();

  it('finds the imports it checks', () => {
    expect(all.length).toBeGreaterThan(300);
    expect(all).toContainEqual({ from: 'src/app/app.ts', to: 'adapters/media-stream/server.ts' });
  });

  it('gives every module a layer', () => {
    const unplaced = [...new Set(all.flatMap((e) => [e.from, e.to]))].filter((p) => !unitOf(p));
    expect(unplaced).toEqual([]);
  });

  it('has every import point down, or within its own folder', () => {
    const wrong = all
      .filter((e) => {
        const a = unitOf(e.from);
        const b = unitOf(e.to);
        if (!a || !b || a.unit === b.unit) return false;
        return b.rank >= a.rank;
      })
      .map((e) => `${e.from} → ${e.to}`);
    expect(wrong).toEqual([]);
  });

  it('has no import cycle, inside a unit or across units', () => {
    expect(cycles(all)).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const made: Edge[] = [
      { from: 'src/x/a.ts', to: 'src/x/b.ts' },
      { from: 'src/x/b.ts', to: 'src/x/c.ts' },
      { from: 'src/x/c.ts', to: 'src/x/a.ts' },
      { from: 'src/x/c.ts', to: 'src/x/d.ts' },
    ];
    expect(cycles(made)).toEqual(['src/x/a.ts ⇄ src/x/b.ts ⇄ src/x/c.ts']);
    expect(cycles(made.slice(0, 2))).toEqual([]);
  });
});

/**
 * Every import cycle, each named once by the modules in it (in name order): the strongly connected
 * components of the import graph (Tarjan's algorithm) with more than one module, or a module that
 * imports itself.
 */
function cycles(edges: readonly Edge[]): string[] {
  const next = new Map<string, string[]>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, []);
    next.get(e.from)!.push(e.to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (next.get(v) ?? []).includes(v)) found.push(component.sort().join(' ⇄ '));
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return found.sort();
}
