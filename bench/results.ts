// The results files in bench/results/: each bench's headline comparisons as
// data, which tools/bench-charts.js draws into the charts of BENCHMARKS.md and
// the documentation site. A bench updates the rows it measured in its run and
// keeps the others (a run of some phases only changes their rows).
//
// A full run writes bench/results/<bench>.json; a quick run (figures not
// comparable) leaves it as it was. BENCH_RESULTS_DIR=<dir> sends any run's
// figures, a quick one's included, to <dir>/<bench>.json instead (started
// from a copy of the recorded file): a way to check the wiring without
// touching the recorded figures.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

export interface RatioRow {
  readonly label: string;
  readonly runs: readonly number[];
  readonly target?: number;
  readonly better: 'higher' | 'lower';
}

export interface Bar {
  readonly name: string;
  readonly value: number;
}

export interface BarsRow {
  readonly label: string;
  readonly bars: readonly Bar[];
}

export type Chart =
  | { readonly id: string; readonly title: string; readonly kind: 'ratio'; readonly peer: string; readonly rows: readonly RatioRow[] }
  | { readonly id: string; readonly title: string; readonly kind: 'bars'; readonly unit: string; readonly better: 'higher' | 'lower'; readonly rows: readonly BarsRow[] };

export interface ResultsFile {
  readonly bench: string;
  readonly commands: readonly string[];
  readonly recorded: string;
  readonly commit: string;
  readonly runs: string;
  readonly source: string;
  readonly charts: readonly Chart[];
  readonly memory?: { readonly label: string; readonly ours: number; readonly peers: Readonly<Record<string, number>> };
}

export interface ResultsUpdate {
  /** What was run, in a few words (the machine, the load, how many runs). */
  readonly runs: string;
  /** Rows measured in this run, by chart id; each replaces the row of the same label. */
  readonly rows: Readonly<Record<string, ReadonlyArray<RatioRow | BarsRow>>>;
  readonly memory?: ResultsFile['memory'];
}

/** bench/results of the repository (the benches run compiled, from dist/bench). */
function resultsDir(): string | null {
  for (const candidate of [resolve(__dirname, '..', '..', 'bench', 'results'), resolve(process.cwd(), 'bench', 'results')]) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

function currentCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The folder of BENCH_RESULTS_DIR, if set. */
function scratchDir(): string | null {
  const dir = process.env.BENCH_RESULTS_DIR;
  return dir === undefined || dir.trim() === '' ? null : resolve(dir);
}

/**
 * Writes this run's figures into bench/results/<bench>.json, or into
 * <BENCH_RESULTS_DIR>/<bench>.json when that is set (copied from
 * bench/results first if it is not there yet); returns the file, or null
 * when there is no such folder.
 */
export function updateResults(bench: string, update: ResultsUpdate): string | null {
  const recorded = resultsDir();
  const scratch = scratchDir();
  const dir = scratch ?? recorded;
  if (dir === null) return null;
  const file = join(dir, `${bench}.json`);
  if (scratch !== null && !existsSync(file)) {
    if (recorded === null) return null;
    mkdirSync(scratch, { recursive: true });
    copyFileSync(join(recorded, `${bench}.json`), file);
  }
  const previous = JSON.parse(readFileSync(file, 'utf8')) as ResultsFile;
  const charts = previous.charts.map((chart): Chart => {
    const measured = update.rows[chart.id] ?? [];
    const replace = <Row extends { readonly label: string }>(rows: readonly Row[]): Row[] =>
      rows.map((row) => (measured.find((candidate) => candidate.label === row.label) as Row | undefined) ?? row);
    return chart.kind === 'ratio' ? { ...chart, rows: replace(chart.rows) } : { ...chart, rows: replace(chart.rows) };
  });
  const next: ResultsFile = {
    ...previous,
    recorded: new Date().toISOString().slice(0, 10),
    commit: currentCommit(),
    runs: update.runs,
    source: `${bench} bench output`,
    charts,
    ...(update.memory ? { memory: update.memory } : {}),
  };
  writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`);
  return file;
}

/**
 * The end of a bench run: after a full run (`comparable`), or with
 * BENCH_RESULTS_DIR set, writes the figures `update` builds through
 * updateResults and says where they went; after a quick run without it,
 * says that the recorded file was left as it was.
 */
export function recordResults(bench: string, comparable: boolean, update: () => ResultsUpdate, why = 'QUICK run'): void {
  if (!comparable && scratchDir() === null) {
    console.log(`\n${why}: bench/results/${bench}.json left as it was (BENCH_RESULTS_DIR=<dir> writes this run's figures to <dir>/${bench}.json instead).`);
    return;
  }
  const written = updateResults(bench, update());
  const shown = written === null || relative(process.cwd(), written).startsWith('..') ? written : relative(process.cwd(), written);
  if (written === null) console.log("\nNo bench/results folder found: this run's figures were not written.");
  else if (scratchDir() !== null) console.log(`\nThe headline figures of this run are in ${shown} (BENCH_RESULTS_DIR; bench/results/${bench}.json left as it was).`);
  else console.log(`\nThe headline figures of this run are in ${shown}; redraw the charts with npm run docs:charts.`);
}
