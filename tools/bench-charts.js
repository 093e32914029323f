#!/usr/bin/env node
// The benchmarks' headline comparisons as SVG charts, drawn from the results
// files in bench/results/ (the last recorded figures of each bench), into
// docs/benchmarks/charts/. BENCHMARKS.md and the site show these files.
//
//   node tools/bench-charts.js           # (re)write the charts
//   node tools/bench-charts.js --check   # exit 1 if a chart differs from its results file
//
// A results file: { bench, commands, recorded, commit, runs, source, charts: [...], memory? }.
// A chart is either
//   { id, title, kind: 'ratio', peer, rows: [{ label, runs: [x, ...], target?, better: 'higher' | 'lower' }] }
//     each row a multiple of the peer's figure measured in the same run (the peer is 1x), or
//   { id, title, kind: 'bars', unit, better, rows: [{ label, bars: [{ name, value }] }] }
//     figures side by side, the first bar of each row being nestjs-delay's.
// Every file's `memory` ({ label, ours, peers: { name: bytes } }) also goes into one chart of bytes per pending action.
'use strict';

const { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const OUT = path.join(ROOT, 'docs', 'benchmarks', 'charts');

const WIDTH = 820;
const LABEL_WIDTH = 290;
const PLOT_LEFT = LABEL_WIDTH + 10;
const PLOT_WIDTH = 360;
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"';
const COLORS = { ours: '#3e7b5a', short: '#c77d1a', peer: '#9aa3ad', target: '#b8322c', axis: '#59616b', text: '#1f2328' };

function escape(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function number(value) {
  if (value >= 1000) return Math.round(value).toLocaleString('en-US');
  if (value >= 100) return String(Math.round(value));
  return String(Math.round(value * 100) / 100);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function frame(title, subtitle, height, body) {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-labelledby="t">`,
    `<title id="t">${escape(title)}</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="26" ${FONT} font-size="16" font-weight="600" fill="${COLORS.text}">${escape(title)}</text>`,
    `<text x="16" y="46" ${FONT} font-size="12" fill="${COLORS.axis}">${escape(subtitle)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

function ratioChart(chart, results) {
  const rowHeight = 34;
  const top = 70;
  const values = chart.rows.flatMap((row) => [...row.runs, row.target ?? 0]);
  const max = Math.max(1, ...values) * 1.12;
  const x = (value) => PLOT_LEFT + (value / max) * PLOT_WIDTH;
  const body = [];
  chart.rows.forEach((row, index) => {
    const y = top + index * rowHeight;
    const mid = median(row.runs);
    const met = row.target === undefined ? true : row.better === 'lower' ? mid <= row.target : mid >= row.target;
    const better = row.better === 'lower' ? 'lower is better' : 'higher is better';
    body.push(`<text x="${LABEL_WIDTH}" y="${y + 14}" ${FONT} font-size="12" text-anchor="end" fill="${COLORS.text}">${escape(row.label)}</text>`);
    body.push(`<text x="${LABEL_WIDTH}" y="${y + 27}" ${FONT} font-size="10" text-anchor="end" fill="${COLORS.axis}">${better}</text>`);
    body.push(`<rect x="${PLOT_LEFT}" y="${y + 4}" width="${(x(mid) - PLOT_LEFT).toFixed(1)}" height="18" fill="${met ? COLORS.ours : COLORS.short}"><title>${escape(`${row.label}: median ${number(mid)}x ${chart.peer}`)}</title></rect>`);
    for (const run of row.runs) body.push(`<circle cx="${x(run).toFixed(1)}" cy="${y + 13}" r="3" fill="#ffffff" stroke="${COLORS.text}" stroke-width="1.2"/>`);
    if (row.target !== undefined) {
      body.push(`<line x1="${x(row.target).toFixed(1)}" x2="${x(row.target).toFixed(1)}" y1="${y}" y2="${y + 26}" stroke="${COLORS.target}" stroke-width="2" stroke-dasharray="3 2"/>`);
    }
    const runs = row.runs.map(number).join(' / ');
    body.push(`<text x="${PLOT_LEFT + PLOT_WIDTH + 8}" y="${y + 13}" ${FONT} font-size="11" fill="${COLORS.text}">${escape(`${runs}x`)}</text>`);
    if (row.target !== undefined) {
      const target = `target ${row.better === 'lower' ? '≤' : '≥'} ${number(row.target)}x`;
      body.push(`<text x="${PLOT_LEFT + PLOT_WIDTH + 8}" y="${y + 26}" ${FONT} font-size="10" fill="${COLORS.target}">${escape(target)}</text>`);
    }
  });
  const bottom = top + chart.rows.length * rowHeight;
  body.push(`<line x1="${x(1).toFixed(1)}" x2="${x(1).toFixed(1)}" y1="${top - 6}" y2="${bottom}" stroke="${COLORS.axis}" stroke-width="1.5"/>`);
  body.push(`<text x="${x(1).toFixed(1)}" y="${top - 10}" ${FONT} font-size="11" text-anchor="middle" fill="${COLORS.axis}">${escape(`${chart.peer} = 1x`)}</text>`);
  body.push(`<text x="16" y="${bottom + 22}" ${FONT} font-size="11" fill="${COLORS.axis}">${escape(`Each figure is a multiple of ${chart.peer}'s, measured in the same run. Bar: the median of the runs`)}</text>`);
  body.push(`<text x="16" y="${bottom + 38}" ${FONT} font-size="11" fill="${COLORS.axis}">${escape('(green: meets its target, amber: short of it); circles: each run; dashed red line: the target.')}</text>`);
  body.push(`<text x="16" y="${bottom + 54}" ${FONT} font-size="11" fill="${COLORS.axis}">${escape(footer(results))}</text>`);
  return frame(chart.title, subtitle(results), bottom + 66, body);
}

function barsChart(chart, results) {
  const barHeight = 16;
  const gap = 6;
  const top = 66;
  const max = Math.max(...chart.rows.flatMap((row) => row.bars.map((bar) => bar.value))) * 1.05;
  const body = [];
  let y = top;
  for (const row of chart.rows) {
    body.push(`<text x="16" y="${y + 12}" ${FONT} font-size="12" font-weight="600" fill="${COLORS.text}">${escape(row.label)}</text>`);
    y += 20;
    row.bars.forEach((bar, index) => {
      const width = Math.max(1.5, (bar.value / max) * PLOT_WIDTH);
      body.push(`<text x="${LABEL_WIDTH}" y="${y + 12}" ${FONT} font-size="12" text-anchor="end" fill="${COLORS.text}">${escape(bar.name)}</text>`);
      body.push(`<rect x="${PLOT_LEFT}" y="${y}" width="${width.toFixed(1)}" height="${barHeight}" fill="${index === 0 ? COLORS.ours : COLORS.peer}"><title>${escape(`${bar.name}: ${number(bar.value)} ${chart.unit}`)}</title></rect>`);
      body.push(`<text x="${(PLOT_LEFT + width + 6).toFixed(1)}" y="${y + 12}" ${FONT} font-size="11" fill="${COLORS.text}">${escape(`${number(bar.value)} ${chart.unit}`)}</text>`);
      y += barHeight + gap;
    });
    y += 8;
  }
  body.push(`<text x="16" y="${y + 12}" ${FONT} font-size="11" fill="${COLORS.axis}">${escape(`${chart.better === 'lower' ? 'Lower' : 'Higher'} is better. Green: nestjs-delay; grey: the peers, measured in the same run.`)}</text>`);
  body.push(`<text x="16" y="${y + 28}" ${FONT} font-size="11" fill="${COLORS.axis}">${escape(footer(results))}</text>`);
  return frame(chart.title, subtitle(results), y + 40, body);
}

function subtitle(results) {
  return `${results.commands.join(', ')}: ${results.runs}`;
}

function footer(results) {
  return `Recorded ${results.recorded} at ${results.commit}; bench/results/${results.bench}.json, drawn by tools/bench-charts.js.`;
}

function loadResults() {
  return readdirSync(RESULTS)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => JSON.parse(readFileSync(path.join(RESULTS, name), 'utf8')));
}

/** Every chart: file name -> SVG text. */
function render(all = loadResults()) {
  const files = new Map();
  for (const results of all) {
    for (const chart of results.charts) {
      const svg = chart.kind === 'ratio' ? ratioChart(chart, results) : chart.kind === 'bars' ? barsChart(chart, results) : null;
      if (svg === null) throw new Error(`bench/results/${results.bench}.json: chart ${chart.id} has an unknown kind ${chart.kind}`);
      files.set(`${chart.id}.svg`, svg);
    }
  }
  const memory = all.filter((results) => results.memory);
  if (memory.length > 0) {
    const chart = {
      title: 'Bytes per pending action, each driver against its peer',
      unit: 'B',
      better: 'lower',
      rows: memory.map((results) => ({
        label: results.memory.label,
        bars: [{ name: 'nestjs-delay', value: results.memory.ours }, ...Object.entries(results.memory.peers).map(([name, value]) => ({ name, value }))],
      })),
    };
    const summary = {
      bench: memory.map((results) => results.bench).join(', '),
      commands: memory.flatMap((results) => results.commands.slice(0, 1)),
      runs: 'the latest round of each',
      recorded: memory.map((results) => results.recorded).sort().pop(),
      commit: 'the commits of each file',
    };
    const svg = barsChart(chart, { ...summary, bench: '{' + summary.bench + '}' });
    files.set('memory.svg', svg);
  }
  return files;
}

function main() {
  const check = process.argv.includes('--check');
  const files = render();
  const stale = [];
  if (!check) {
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
  }
  for (const [name, svg] of files) {
    const file = path.join(OUT, name);
    if (check) {
      if (!existsSync(file) || readFileSync(file, 'utf8') !== svg) stale.push(name);
    } else {
      writeFileSync(file, svg);
    }
  }
  if (check) {
    const extra = existsSync(OUT) ? readdirSync(OUT).filter((name) => !files.has(name)) : [];
    if (stale.length > 0 || extra.length > 0) {
      console.error(`docs/benchmarks/charts is not what bench/results says: ${[...stale, ...extra].join(', ')}; run node tools/bench-charts.js`);
      process.exit(1);
    }
    process.stdout.write(`${files.size} charts up to date\n`);
  } else {
    process.stdout.write(`wrote ${[...files.keys()].map((name) => `docs/benchmarks/charts/${name}`).join(', ')}\n`);
  }
}

if (require.main === module) main();

module.exports = { render };
