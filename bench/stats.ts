/** Percentile by nearest rank over a copy of the values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

/** This process's CPU time so far (µs), user and system, every thread's included (workers, ONNX Runtime). */
export function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

export function fmt(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

/** Prints a table with aligned columns. */
export function printTable(
  title: string,
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  console.log(`\n## ${title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}
