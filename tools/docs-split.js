#!/usr/bin/env node
// The record of where the long README.md and BENCHMARKS.md went when the
// documentation site was made: every section of theirs, by its heading, and
// the page of docs/ it now lives on. Running it again re-derives those pages
// from the two files as they stood at a commit, so a section added to the old
// README on another branch can be moved the same way:
//
//   node tools/docs-split.js --rev <commit>        # writes the pages (and BENCHMARKS.md)
//   node tools/docs-split.js --rev <commit> --list # prints section -> page, writes nothing
//
// A `##` section it does not know stops it, naming the section: add it to
// README_PAGES or BENCHMARK_PAGES below. Subsections go where their parent
// goes unless listed themselves. Links between sections are rewritten to
// the sections' new pages, links to files of the repository to paths
// relative to the page (they work on GitHub; the site sends them there).
// README.md itself is not written: the front page is kept by hand.
'use strict';

const { execFileSync } = require('node:child_process');
const { mkdirSync, writeFileSync } = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');

/** GitHub's heading anchors (the site uses the same: docs/.vitepress/config.mts). */
function githubSlug(text) {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** A heading's text as the anchor sees it: inline code and emphasis marks dropped, link text kept. */
function headingText(title) {
  return title.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
}

// Links in `intro`, `outro`, `after` and `replace` are written as in the old files: from the repository's root, or to the old files' anchors.
// Pages: `title` given, every listed section sits under it at level 2; no title, the first section's heading is the page's title.
const README_PAGES = [
  {
    file: 'docs/guide/index.md',
    title: 'What nestjs-delay is',
    sections: ['(preamble)'],
    outro: [
      '## Choose a driver',
      '',
      'One API, three places to keep the actions; the driver is one option of `DelayModule.forRoot`, so an app can start on one and move to another.',
      '',
      '| | `wheel` (default) | `redis` | `postgres` |',
      '| --- | --- | --- | --- |',
      '| actions live in | the memory of one process | Redis, changed only by Lua scripts | tables of your own PostgreSQL |',
      '| a restart of your app | loses what was pending | loses nothing | loses nothing |',
      '| instances | one | any number; each action runs on one of them | any number; each action runs on one of them |',
      '| schedule inside your database transaction | no | no | yes: pg, TypeORM, Prisma, Kysely, Drizzle, Knex, `@Transactional()` |',
      '| to install | nothing | `ioredis` 5 or 6, Redis 6.2+ with AOF | `pg` 8, PostgreSQL |',
      '| timing | one tick late at most (100 ms by default) | milliseconds; lateness p99 2-3 ms under steady load | lateness p99 5-7 ms with an idle worker |',
      '| pick it for | one process, tests, actions you can lose on a restart | durable actions across a fleet, the highest rates | actions that must commit or roll back with your rows |',
      '| read | [the wheel driver](docs/drivers/wheel.md) | [the Redis driver](docs/drivers/redis.md) | [the PostgreSQL driver](docs/drivers/postgres.md) |',
      '',
      'The lateness figures are those of [the benchmarks](BENCHMARKS.md) on their machine.',
      '',
      'Next: [install it and try the quick start](docs/guide/getting-started.md), or read [the API in one page](docs/guide/api.md).',
    ].join('\n'),
  },
  { file: 'docs/guide/getting-started.md', sections: ['Quick start'] },
  {
    file: 'docs/guide/api.md',
    sections: ['The API'],
    // What was "below" in the one long README is on other pages now.
    replace: [
      ["`{ type: 'redis', ... }` (below)", "`{ type: 'redis', ... }` ([the Redis driver](#the-redis-driver))"],
      ['on every instance (below)', 'on every instance ([pause and resume](#pause-and-resume-a-topic))'],
      ['or paused, with counts (below)', 'or paused, with counts ([topics](#topics))'],
      ["each topic's consumer and lag (below)", "each topic's consumer and lag ([health](#health))"],
    ],
  },
  { file: 'docs/drivers/wheel.md', sections: ['The wheel driver (default)'] },
  { file: 'docs/drivers/redis.md', sections: ['The Redis driver'] },
  {
    file: 'docs/guide/faults.md',
    title: 'Faults and guarantees',
    intro:
      'What each driver promises, and what a crash, a failover or a slow handler can cost. ' +
      'The wheel driver keeps everything in one process: a restart loses what was pending ([the wheel driver](docs/drivers/wheel.md)). ' +
      'The PostgreSQL driver keeps its actions in your database, under its transactions: see [the PostgreSQL driver](docs/drivers/postgres.md) ' +
      'for transactions that meet, migrations, shared databases and PgBouncer. The Redis driver, below, depends on how Redis is run. ' +
      'The reasoning behind each guarantee is in [the design](docs/design.md).',
    sections: ['Faults: what happens, and what can be lost'],
  },
  { file: 'docs/drivers/redis-sharding.md', sections: ['Sharding a hot topic'] },
  { file: 'docs/drivers/postgres.md', sections: ['The PostgreSQL driver'] },
  { file: 'docs/guide/batching.md', sections: ['Per-key batching: `collect`'] },
  { file: 'docs/guide/recurring.md', sections: ['Recurring actions'] },
  {
    file: 'docs/guide/transactions.md',
    sections: ['Scheduling inside your transaction'],
    replace: [['**postgres driver** ([above](#the-postgresql-driver))', '**[postgres driver](#the-postgresql-driver)**']],
  },
  { file: 'docs/guide/exactly-once.md', sections: ['Exactly once on your database'] },
  { file: 'docs/operations/production.md', sections: ['Running it in production'] },
  { file: 'docs/operations/health.md', title: 'Health', sections: ['Health', 'Health checks with @nestjs/terminus'], renames: { Health: 'What `health()` reports' } },
  { file: 'docs/operations/metrics-traces.md', title: 'Metrics and traces', sections: ['Metrics and traces (OpenTelemetry)', 'Trace context'] },
  { file: 'docs/operations/admin.md', sections: ['The admin page'] },
  { file: 'docs/guide/testing.md', sections: ['Testing your app: the virtual clock'] },
  { file: 'docs/guide/writing-a-driver.md', sections: ['Writing a driver'] },
  { file: 'docs/guide/upgrading.md', sections: ['Versioning and upgrades'] },
  {
    file: 'docs/internals/repository.md',
    sections: ['This repository'],
    outro: [
      '## The documentation',
      '',
      'The user documentation is the site built from `docs/`; [docs/README.md](docs/README.md) says what is where and why VitePress.',
      '',
      '| command | what |',
      '| --- | --- |',
      '| `npm run docs:build` | the API reference from the sources (TypeDoc, into `docs/api/`), then the site (VitePress, into `docs/.vitepress/dist`) |',
      '| `npm run docs:check-links` | every internal link and anchor of the built site, and of the Markdown as GitHub shows it, resolves |',
      '| `npm run docs:charts` | redraw the benchmark charts (`docs/benchmarks/charts/`) from `bench/results/` |',
      '| `npm run docs:dev` | the site on a local server that reloads as you edit |',
      '',
      '`.ci/run` builds the site and checks its links before the tests; `test/docs/site.e2e-spec.ts` opens it in Chromium.',
    ].join('\n'),
  },
];

const JOURNAL_INTRO =
  'A page of the benchmark journal: how the figures were measured and what each round changed. ' +
  "Today's figures against each peer, and the targets, are in [BENCHMARKS.md](BENCHMARKS.md); the charts are [here](docs/benchmarks/index.md).";

const BENCHMARK_PAGES = [
  {
    file: 'BENCHMARKS.md',
    sections: ['(preamble)', 'Commands', 'Summary: the targets against the current code'],
    keep: true,
    after: {
      Commands: [
        '## Charts',
        '',
        'The headline comparisons, drawn by `node tools/bench-charts.js` from the last recorded figures in',
        '`bench/results/` (a test fails when a chart and its results file disagree). The tables below give every figure.',
        '',
        '![Wheel driver and DelayService against setTimeout](docs/benchmarks/charts/wheel-vs-settimeout.svg)',
        '',
        '![Redis driver against BullMQ](docs/benchmarks/charts/redis-vs-bullmq.svg)',
        '',
        '![PostgreSQL driver against pg-boss and graphile-worker, actions per second](docs/benchmarks/charts/postgres-rates.svg)',
        '',
        '![PostgreSQL driver, lateness p99](docs/benchmarks/charts/postgres-lateness.svg)',
        '',
        '![PostgreSQL driver, transactional handlers: drain, actions per second](docs/benchmarks/charts/postgres-transactional.svg)',
        '',
        '![Recurring schedules against BullMQ job schedulers](docs/benchmarks/charts/recurring-vs-bullmq.svg)',
        '',
        '![Bytes per pending action](docs/benchmarks/charts/memory.svg)',
      ].join('\n'),
    },
    outro: [
      '## Method and history',
      '',
      'How each bench measures, every table of its latest rounds, the profiles and what each change did are on the pages of the journal:',
      '[how to read them](docs/benchmarks/method.md), [wheel and the service path](docs/benchmarks/wheel.md),',
      '[Redis](docs/benchmarks/redis.md), [recurring actions](docs/benchmarks/recurring.md), [PostgreSQL](docs/benchmarks/postgres.md),',
      '[Redis Cluster](docs/benchmarks/redis-cluster.md), [batching](docs/benchmarks/batching.md) and [telemetry](docs/benchmarks/telemetry.md);',
      'the rounds before those in [docs/benchmarks-history.md](docs/benchmarks-history.md). The sections the summary above names',
      '("Latest round", "Gathered schedule calls", "What each missed target needs", ...) are on those pages.',
    ].join('\n'),
  },
  { file: 'docs/benchmarks/method.md', sections: ['How to read this'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/wheel.md', sections: ['Wheel driver and the service path'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/redis.md', sections: ['Redis driver'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/recurring.md', sections: ['Recurring actions'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/postgres.md', sections: ['PostgreSQL driver'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/redis-cluster.md', sections: ['Sharding a hot topic over a Redis Cluster'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/batching.md', sections: ['Batching (collect)'], intro: JOURNAL_INTRO },
  { file: 'docs/benchmarks/telemetry.md', sections: ['Telemetry: the cost of instrumentation'], intro: JOURNAL_INTRO },
];

/** Splits Markdown into sections at headings outside code fences; the text before the first `##` is '(preamble)'. */
function parseSections(text, source) {
  const lines = text.split('\n');
  const sections = [{ source, level: 1, title: '(preamble)', lines: [] }];
  let fence = null;
  for (const line of lines) {
    const opening = /^(```+|~~~+)/.exec(line);
    if (opening) {
      if (fence === null) fence = opening[1];
      else if (line.startsWith(fence)) fence = null;
    }
    const heading = fence === null ? /^(#{2,6}) (.*)$/.exec(line) : null;
    if (heading) sections.push({ source, level: heading[1].length, title: heading[2].trim(), lines: [] });
    else sections[sections.length - 1].lines.push(line);
  }
  // Old anchors, deduplicated as GitHub does within one file.
  const seen = new Map();
  for (const section of sections) {
    if (section.title === '(preamble)') continue;
    const base = githubSlug(headingText(section.title));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    section.oldSlug = count === 0 ? base : `${base}-${count}`;
  }
  return sections;
}

/** Assigns each section to a page: listed ones by title, the others with their parent. */
function assign(sections, pages, sourceName) {
  const byTitle = new Map();
  for (const page of pages) for (const title of page.sections) byTitle.set(title, page);
  const unknown = [];
  const stack = [];
  for (const section of sections) {
    while (stack.length > 0 && stack[stack.length - 1].level >= section.level) stack.pop();
    // The kept sections of BENCHMARKS.md are its `##` ones (each driver's section has a "### Commands" of its own).
    const listed = byTitle.get(section.title);
    if (listed && !(listed.keep && section.level > 2)) section.page = listed;
    else if (stack.length > 0 && section.level > 2) section.page = stack[stack.length - 1].page;
    else unknown.push(section.title);
    stack.push(section);
  }
  if (unknown.length > 0) {
    throw new Error(`${sourceName}: no page for the section(s) ${unknown.map((title) => `"${title}"`).join(', ')}: add them to the page list of tools/docs-split.js`);
  }
}

function renderPage(page, sections) {
  const own = sections.filter((section) => section.page === page);
  const headed = own.filter((section) => section.title !== '(preamble)');
  const minLevel = Math.min(...headed.map((section) => section.level));
  const atMin = headed.filter((section) => section.level === minLevel).length;
  // No title: the first section's heading becomes the page's `#`; its subsections move up under it.
  const shift = page.title || page.keep ? minLevel - 2 : atMin === 1 ? minLevel - 1 : minLevel - 2;
  const out = [];
  if (page.title) out.push(`# ${page.title}`, '');
  if (page.intro) out.push(page.intro, '');
  const seen = new Map();
  for (const section of own) {
    if (section.title !== '(preamble)') {
      let title = page.renames?.[section.title] ?? section.title;
      let level = page.keep ? section.level : section.level - shift;
      if (!page.title && !page.keep && section === headed[0]) level = 1;
      const base = githubSlug(headingText(title));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      section.newSlug = count === 0 ? base : `${base}-${count}`;
      out.push(`${'#'.repeat(level)} ${title}`);
    } else if (!page.keep) {
      // The old file's own `#` title and badge lines stay behind.
      const start = section.lines.findIndex((line) => line.startsWith('# '));
      section.lines = section.lines.slice(start + 1);
    }
    out.push(...section.lines);
    if (page.after?.[section.title]) out.push('', page.after[section.title], '');
  }
  if (page.outro) out.push('', page.outro);
  let text = out.join('\n').replace(/\n{3,}/g, '\n\n').trim() + '\n';
  for (const [from, to] of page.replace ?? []) {
    if (!text.includes(from)) throw new Error(`${page.file}: the text to replace is not there any more: ${from}`);
    text = text.replace(from, to);
  }
  return text;
}

/** Rewrites a page's links: to old sections (anywhere), to files of the repository. */
function rewriteLinks(text, page, anchors) {
  const from = path.dirname(path.join(ROOT, page.file));
  const rel = (target) => {
    const relative = path.relative(from, path.join(ROOT, target)).split(path.sep).join('/');
    return relative === '' ? path.basename(target) : relative;
  };
  const resolve = (source, anchor) => {
    const target = anchors.get(`${source}#${anchor}`);
    if (!target) throw new Error(`${page.file}: a link to ${source}#${anchor}, a section that is not there`);
    return `${target.file === page.file ? '' : rel(target.file)}#${target.slug}`;
  };
  const source = page.source;
  const link = (href) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return href;
    if (href.startsWith('#')) return resolve(source, href.slice(1));
    const [file, anchor] = href.split('#', 2);
    if ((file === 'README.md' || file === 'BENCHMARKS.md') && anchor) return resolve(file, anchor);
    return page.keep ? href : `${rel(file)}${anchor ? `#${anchor}` : ''}`;
  };
  let fence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^(```|~~~)/.test(line)) fence = !fence;
      if (fence) return line;
      return line
        .replace(/\]\(([^)\s]+)\)/g, (_all, href) => `](${link(href)})`)
        .replace(/(<img [^>]*src=")([^"]+)(")/g, (_all, before, href, after) => `${before}${link(href)}${after}`);
    })
    .join('\n');
}

function readAt(rev, file) {
  return execFileSync('git', ['show', `${rev}:${file}`], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function split(readme, benchmarks) {
  const all = [];
  const plans = [
    { name: 'README.md', text: readme, pages: README_PAGES },
    { name: 'BENCHMARKS.md', text: benchmarks, pages: BENCHMARK_PAGES },
  ];
  const rendered = [];
  for (const plan of plans) {
    const sections = parseSections(plan.text, plan.name);
    assign(sections, plan.pages, plan.name);
    for (const page of plan.pages) {
      page.source = plan.name;
      rendered.push({ page, text: renderPage(page, sections) });
    }
    all.push(...sections);
  }
  const anchors = new Map();
  for (const section of all) {
    if (section.oldSlug) anchors.set(`${section.source}#${section.oldSlug}`, { file: section.page.file, slug: section.newSlug });
  }
  return { sections: all, pages: rendered.map(({ page, text }) => ({ file: page.file, text: rewriteLinks(text, page, anchors) })) };
}

function main() {
  const args = process.argv.slice(2);
  const revAt = args.indexOf('--rev');
  if (revAt < 0 || !args[revAt + 1]) {
    console.error('usage: node tools/docs-split.js --rev <commit> [--list]   (the commit whose README.md and BENCHMARKS.md are split)');
    process.exit(2);
  }
  const rev = args[revAt + 1];
  const { sections, pages } = split(readAt(rev, 'README.md'), readAt(rev, 'BENCHMARKS.md'));
  if (args.includes('--list')) {
    for (const section of sections) {
      const where = section.page.keep ? `${section.page.file} (stays)` : `${section.page.file}${section.newSlug ? `#${section.newSlug}` : ''}`;
      process.stdout.write(`${section.source} ${'#'.repeat(section.level)} ${section.title} -> ${where}\n`);
    }
    return;
  }
  for (const page of pages) {
    mkdirSync(path.dirname(path.join(ROOT, page.file)), { recursive: true });
    writeFileSync(path.join(ROOT, page.file), page.text);
    process.stdout.write(`wrote ${page.file}\n`);
  }
}

if (require.main === module) {
  try {
    main();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }
}

module.exports = { githubSlug, parseSections, split };
