import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';

/*
 * The documentation site: the pages in docs/, the API reference TypeDoc
 * writes into docs/api/ (npm run docs:build runs it first), local search.
 * Headings get GitHub's anchors, so that a link like `redis.md#sharding-a-hot-topic`
 * works both here and when the same Markdown is read on GitHub.
 */

const DOCS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = path.resolve(DOCS, '..');
const REPOSITORY = 'https://github.com/nestjs-delay/nestjs-delay';

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = path.join(DOCS, 'api', 'typedoc-sidebar.json');
  if (!existsSync(file)) return [];
  return JSON.parse(readFileSync(file, 'utf8')) as DefaultTheme.SidebarItem[];
}

const sidebar: DefaultTheme.Sidebar = [
  {
    text: 'Getting started',
    items: [
      { text: 'What it is', link: '/guide/' },
      { text: 'Install and quick start', link: '/guide/getting-started' },
      { text: 'The API in one page', link: '/guide/api' },
    ],
  },
  {
    text: 'Drivers',
    items: [
      { text: 'Wheel (in memory)', link: '/drivers/wheel' },
      { text: 'Redis', link: '/drivers/redis' },
      { text: 'Redis: sharding a hot topic', link: '/drivers/redis-sharding' },
      { text: 'PostgreSQL', link: '/drivers/postgres' },
    ],
  },
  {
    text: 'Scheduling',
    items: [
      { text: 'Inside your transaction, per client', link: '/guide/transactions' },
      { text: 'Exactly once on your database', link: '/guide/exactly-once' },
      { text: 'Recurring actions', link: '/guide/recurring' },
      { text: 'Per-key batching', link: '/guide/batching' },
    ],
  },
  {
    text: 'Operations',
    items: [
      { text: 'Timeouts, pause, topics', link: '/operations/production' },
      { text: 'Health', link: '/operations/health' },
      { text: 'Metrics and traces', link: '/operations/metrics-traces' },
      { text: 'The admin page', link: '/operations/admin' },
    ],
  },
  {
    text: 'Your tests and your risks',
    items: [
      { text: 'Testing with the virtual clock', link: '/guide/testing' },
      { text: 'Faults and guarantees', link: '/guide/faults' },
      { text: 'Versioning and upgrading', link: '/guide/upgrading' },
    ],
  },
  {
    text: 'Extending',
    items: [{ text: 'Writing a driver', link: '/guide/writing-a-driver' }],
  },
  {
    text: 'Benchmarks',
    collapsed: true,
    items: [
      { text: 'Charts', link: '/benchmarks/' },
      { text: 'How to read them', link: '/benchmarks/method' },
      { text: 'Wheel and the service path', link: '/benchmarks/wheel' },
      { text: 'Redis', link: '/benchmarks/redis' },
      { text: 'Recurring actions', link: '/benchmarks/recurring' },
      { text: 'PostgreSQL', link: '/benchmarks/postgres' },
      { text: 'Redis Cluster', link: '/benchmarks/redis-cluster' },
      { text: 'Batching', link: '/benchmarks/batching' },
      { text: 'Telemetry', link: '/benchmarks/telemetry' },
      { text: 'Earlier rounds', link: '/benchmarks-history' },
    ],
  },
  {
    text: 'Internals',
    collapsed: true,
    items: [
      { text: 'Design', link: '/design' },
      { text: 'This repository', link: '/internals/repository' },
    ],
  },
  { text: 'API reference', collapsed: true, link: '/api/', items: apiSidebar() },
];

/** Files of docs/ that are not pages of the site (srcExclude below): links to them go to GitHub too. */
const NOT_ON_SITE = ['README.md', 'screenshots', 'typedoc.json'];

/**
 * A relative link that leaves docs/ (the apps, CHANGELOG.md, BENCHMARKS.md), or names a file of it
 * that is no page, works on GitHub but not on the site: on the site it points at the file on GitHub.
 */
function outsideLinks(md: { core: { ruler: { push(name: string, rule: (state: CoreState) => void): void } } }): void {
  md.core.ruler.push('nestjs_delay_outside_links', (state) => {
    const page = typeof state.env.path === 'string' ? state.env.path : undefined;
    if (!page) return;
    const visit = (tokens: readonly LinkToken[]): void => {
      for (const token of tokens) {
        if (token.children) visit(token.children);
        if (token.type !== 'link_open') continue;
        const href = token.attrGet('href');
        if (!href || /^[a-z][a-z0-9+.-]*:|^#|^\//i.test(href)) continue;
        const [file, anchor] = href.split('#', 2);
        const target = path.resolve(path.dirname(page), decodeURIComponent(file));
        const onSite = (target === DOCS || target.startsWith(DOCS + path.sep)) && !NOT_ON_SITE.some((file) => target === path.join(DOCS, file) || target.startsWith(path.join(DOCS, file) + path.sep));
        if (onSite) continue;
        const inRepo = path.relative(ROOT, target).split(path.sep).join('/');
        const kind = path.extname(target) === '' ? 'tree' : 'blob';
        token.attrSet('href', `${REPOSITORY}/${kind}/main/${inRepo}${anchor ? `#${anchor}` : ''}`);
      }
    };
    visit(state.tokens);
  });
}

/** Elements a page may write as HTML; anything else in angle brackets (`<schema>` in prose) is shown as text. */
const HTML_ELEMENTS = new Set(['a', 'abbr', 'b', 'br', 'code', 'details', 'div', 'em', 'i', 'img', 'kbd', 'li', 'ol', 'p', 'pre', 'span', 'strong', 'sub', 'summary', 'sup', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul']);

function plainAngleBrackets(md: { core: { ruler: { push(name: string, rule: (state: CoreState) => void): void } } }): void {
  md.core.ruler.push('nestjs_delay_plain_angle_brackets', (state) => {
    const visit = (tokens: readonly LinkToken[]): void => {
      for (const token of tokens) {
        if (token.children) visit(token.children);
        if (token.type !== 'html_inline') continue;
        const name = /^<\/?([A-Za-z][\w-]*)/.exec(token.content)?.[1]?.toLowerCase();
        if (name === undefined || !HTML_ELEMENTS.has(name)) token.type = 'text';
      }
    };
    visit(state.tokens);
  });
}

interface LinkToken {
  type: string;
  readonly content: string;
  readonly children: readonly LinkToken[] | null;
  attrGet(name: string): string | null;
  attrSet(name: string, value: string): void;
}

interface CoreState {
  readonly tokens: readonly LinkToken[];
  readonly env: { readonly path?: unknown };
}

export default defineConfig({
  title: 'nestjs-delay',
  description: 'Scheduled domain actions for NestJS: do X at time T unless Y happened first.',
  srcExclude: ['README.md', 'screenshots/**'],
  cleanUrls: false,
  lastUpdated: false,
  // The search index and the API pages make large chunks; the site is static and read locally.
  vite: { build: { chunkSizeWarningLimit: 4096 } },
  markdown: {
    anchor: { slugify: githubSlug },
    headers: { slugify: githubSlug },
    config: (md) => {
      outsideLinks(md);
      plainAngleBrackets(md);
    },
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      { text: 'API', link: '/api/' },
      { text: 'Benchmarks', link: '/benchmarks/' },
      { text: 'Design', link: '/design' },
    ],
    sidebar,
    outline: { level: [2, 3] },
    search: { provider: 'local' },
    socialLinks: [{ icon: 'github', link: REPOSITORY }],
  },
});
