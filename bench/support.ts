// Small helpers shared by the benchmarks: a seeded PRNG, garbage collection
// and memory readings, percentiles, Markdown table printing, the load average,
// the build of the library under test.
import { execFileSync } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';

/** Marsaglia's xorshift32: reproducible numbers in [0, 1) from a seed. */
export function xorshift32(seed: number): () => number {
  let state = seed >>> 0 || 0x9e3779b9;
  return () => {
    state = (state ^ (state << 13)) >>> 0;
    state = (state ^ (state >>> 17)) >>> 0;
    state = (state ^ (state << 5)) >>> 0;
    return state / 4_294_967_296;
  };
}

/** Whole milliseconds from `min` to `max` inclusive, drawn from `random`. */
export function randomDelays(count: number, min: number, max: number, random: () => number): Float64Array {
  const delays = new Float64Array(count);
  for (let i = 0; i < count; i++) delays[i] = min + Math.floor(random() * (max - min + 1));
  return delays;
}

function gcFunction(): () => void {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('Run node with --expose-gc (npm run bench:wheel does)');
  return () => {
    gc();
  };
}

/** Full collections, several times, so weak references and finalisers settle too. */
export function collectGarbage(times = 4): void {
  const gc = gcFunction();
  for (let i = 0; i < times; i++) gc();
}

/** Full collections with event-loop turns in between: for use between phases. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    collectGarbage(2);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

export interface MemoryReading {
  readonly heapUsed: number;
  readonly arrayBuffers: number;
  readonly external: number;
}

/** Collects garbage, then reads the heap, array buffers and external memory. */
export function readMemory(): MemoryReading {
  collectGarbage();
  const { heapUsed, arrayBuffers, external } = process.memoryUsage();
  return { heapUsed, arrayBuffers, external };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The value at quantile q (0..1) of an already sorted array (nearest rank). */
export function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** Formats a number with a fixed count of decimals and thousands separators. */
export function fmt(value: number, decimals = 0): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** 10_000 -> "10k", 1_000_000 -> "1M". */
export function sizeLabel(count: number): string {
  if (count >= 1_000_000 && count % 1_000_000 === 0) return `${count / 1_000_000}M`;
  if (count >= 1_000 && count % 1_000 === 0) return `${count / 1_000}k`;
  return String(count);
}

/** A Markdown table with columns padded for reading in a terminal too. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>, rightAligned: readonly boolean[]): string {
  const widths = header.map((title, column) => Math.max(title.length, 3, ...rows.map((row) => row[column].length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((cell, column) => (rightAligned[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (rightAligned[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** A shuffled copy (Fisher-Yates) drawn from `random`. */
export function shuffle<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const held = copy[i];
    copy[i] = copy[j];
    copy[j] = held;
  }
  return copy;
}

/** The 1, 5 and 15 minute load averages, for the header and footer of every run (the machine is shared). */
export function loadAverage(): string {
  return loadavg()
    .map((load) => fmt(load, 2))
    .join(' / ');
}

/**
 * The build of nestjs-delay a bench measures, for its header: the bench and the workers it forks resolve the
 * library from the same folder, which must be this checkout's libs/delay. A second checkout made to compare builds
 * (a git worktree whose node_modules links to this one's) would otherwise load this checkout's library, and both
 * sides of the comparison would measure the same code: such a run is refused. The benches run compiled, from
 * dist/bench, two folders below the checkout.
 */
export function libraryUnderTest(): string {
  const checkout = realpathSync(resolve(__dirname, '..', '..'));
  const entry = realpathSync(require.resolve('nestjs-delay'));
  const own = join(checkout, 'libs', 'delay');
  if (!entry.startsWith(own + sep)) {
    throw new Error(`nestjs-delay resolves outside this checkout (${relative(checkout, entry)}): link node_modules/nestjs-delay to this checkout's libs/delay`);
  }
  let commit = 'no git commit';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: checkout, encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--', 'libs/delay/src'], { cwd: checkout, encoding: 'utf8' }).trim() !== '';
    commit = `${head}${changed ? ' with uncommitted changes to libs/delay/src' : ''}`;
  } catch {
    // not a git checkout (an unpacked copy): the build time still tells builds apart
  }
  return `nestjs-delay from this checkout's libs/delay at ${commit}, built ${statSync(entry).mtime.toISOString()}`;
}
