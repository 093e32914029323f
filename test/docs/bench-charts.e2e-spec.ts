import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * The benchmark charts of BENCHMARKS.md and the site are drawn by
 * tools/bench-charts.js from the results files in bench/results/, never by
 * hand: the committed SVGs must be exactly what the script draws from them.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'tools', 'bench-charts.js');

interface ResultsFile {
  readonly bench: string;
  readonly charts: { readonly id: string; readonly kind: string; readonly rows: { readonly bars?: { value: number }[]; readonly runs?: number[] }[] }[];
}

interface ChartsModule {
  render(all?: readonly ResultsFile[]): Map<string, string>;
}

function results(): ResultsFile[] {
  const dir = path.join(ROOT, 'bench', 'results');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as ResultsFile);
}

async function charts(): Promise<ChartsModule> {
  return (await import(SCRIPT)) as ChartsModule;
}

describe('the benchmark charts', () => {
  it('are what tools/bench-charts.js draws from bench/results (regenerated, not drawn by hand)', () => {
    const result = spawnSync(process.execPath, [SCRIPT, '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('every chart BENCHMARKS.md and the charts page show is one the script draws', async () => {
    const drawn = [...(await charts()).render().keys()];
    expect(drawn).toEqual(expect.arrayContaining(['wheel-vs-settimeout.svg', 'redis-vs-bullmq.svg', 'postgres-rates.svg', 'recurring-vs-bullmq.svg', 'memory.svg']));
    for (const file of ['BENCHMARKS.md', 'docs/benchmarks/index.md']) {
      const shown = [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/charts\/([\w-]+\.svg)/g)].map((match) => match[1]);
      expect(new Set(shown)).toEqual(new Set(drawn));
    }
  });

  it('follow the figures: a new figure in a results file changes its chart', async () => {
    const { render } = await charts();
    const before = render(results());
    const changed = results().map((file) =>
      file.bench !== 'postgres'
        ? file
        : { ...file, charts: file.charts.map((chart) => (chart.id !== 'postgres-rates' ? chart : { ...chart, rows: [{ ...chart.rows[0], bars: [{ name: 'nestjs-delay', value: 99_999 }, ...(chart.rows[0].bars ?? []).slice(1)] }, ...chart.rows.slice(1)] })) },
    );
    const after = render(changed);
    expect(after.get('postgres-rates.svg')).not.toEqual(before.get('postgres-rates.svg'));
    expect(after.get('postgres-rates.svg')).toContain('99,999 actions/s');
    expect(before.get('postgres-rates.svg')).toContain('19,184 actions/s');
    expect(after.get('redis-vs-bullmq.svg')).toEqual(before.get('redis-vs-bullmq.svg'));
  });
});
