import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';

/**
 * The documentation site as a reader meets it: built by `npm run docs:build`
 * (here, if it is not built or older than its sources), served on a free
 * port, opened in Debian's Chromium (nothing is downloaded). And the link
 * check that CI runs on it: it passes on the repository, and fails on a copy
 * with a broken link.
 * DOCS_SCREENSHOTS=1 writes the screenshots into docs/screenshots/ (committed);
 * otherwise they go to a temporary folder.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const DIST = path.join(ROOT, 'docs', '.vitepress', 'dist');
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const CHECK_LINKS = path.join(ROOT, 'tools', 'check-links.js');

/** Newest modification time among a folder's files, skipping what the build writes. */
function newest(dir: string, skip: ReadonlySet<string>): number {
  let latest = 0;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (skip.has(file)) continue;
    const stat = statSync(file);
    latest = Math.max(latest, stat.isDirectory() ? newest(file, skip) : stat.mtimeMs);
  }
  return latest;
}

function ensureSiteBuilt(): void {
  const index = path.join(DIST, 'index.html');
  const generated = new Set(['.vitepress/dist', '.vitepress/cache', 'api', 'screenshots'].map((dir) => path.join(ROOT, 'docs', dir)));
  const sources = Math.max(newest(path.join(ROOT, 'docs'), generated), newest(path.join(ROOT, 'libs', 'delay', 'src'), new Set()));
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  execFileSync(process.execPath, [path.join(ROOT, 'tools', 'docs-build.js')], { cwd: ROOT, stdio: 'pipe', timeout: 600_000 });
}

/** The built site over HTTP, as a static host serves it. */
function serve(dir: string): Promise<Server> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json', '.woff2': 'font/woff2' };
  const server = createServer((request, response) => {
    const urlPath = decodeURIComponent(new URL(request.url ?? '/', 'http://localhost').pathname);
    let file = path.join(dir, urlPath.endsWith('/') ? `${urlPath}index.html` : urlPath);
    if (!existsSync(file) && existsSync(`${file}.html`)) file = `${file}.html`;
    if (!file.startsWith(dir) || !existsSync(file) || statSync(file).isDirectory()) {
      response.writeHead(404).end('not found');
      return;
    }
    response.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function runLinkCheck(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CHECK_LINKS, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

jest.setTimeout(60_000);

describe('the documentation site', () => {
  let server: Server;
  let baseUrl: string;
  let browser: BrowserContext;
  let profile: string;
  let shots: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install chromium), or set CHROMIUM_BIN`);
    ensureSiteBuilt();
    server = await serve(DIST);
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    profile = mkdtempSync(path.join(tmpdir(), 'nestjs-delay-docs-chromium-'));
    shots = process.env.DOCS_SCREENSHOTS ? path.join(ROOT, 'docs', 'screenshots') : mkdtempSync(path.join(tmpdir(), 'nestjs-delay-docs-shots-'));
    mkdirSync(shots, { recursive: true });
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, viewport: { width: 1280, height: 860 } });
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (profile) rmSync(profile, { recursive: true, force: true });
    if (shots && !process.env.DOCS_SCREENSHOTS) rmSync(shots, { recursive: true, force: true });
  });

  afterEach(async () => {
    for (const page of browser.pages()) await page.close();
  });

  async function open(urlPath: string): Promise<Page> {
    const page = await browser.newPage();
    await page.goto(`${baseUrl}${urlPath}`);
    await page.locator('.VPContent').waitFor();
    return page;
  }

  async function screenshot(page: Page, name: string): Promise<void> {
    const file = path.join(shots, name);
    await page.screenshot({ path: file });
    expect(statSync(file).size).toBeGreaterThan(10_000);
  }

  it('has a sidebar by task: getting started, the drivers, transactions, recurring, batching, operations, testing, faults, upgrading, writing a driver', async () => {
    const page = await open('/guide/getting-started.html');
    const sidebar = page.locator('.VPSidebar');
    await sidebar.waitFor();
    const text = await sidebar.innerText();
    for (const entry of [
      'Getting started',
      'Install and quick start',
      'Wheel (in memory)',
      'Redis',
      'PostgreSQL',
      'Inside your transaction, per client',
      'Recurring actions',
      'Per-key batching',
      'Health',
      'Metrics and traces',
      'The admin page',
      'Testing with the virtual clock',
      'Faults and guarantees',
      'Versioning and upgrading',
      'Writing a driver',
      'API reference',
    ]) {
      expect(text).toContain(entry);
    }
    // A sidebar entry leads to its page.
    await sidebar.locator('a:has-text("Inside your transaction, per client")').click();
    await page.waitForURL('**/guide/transactions.html');
    await page.locator('h1:has-text("Scheduling inside your transaction")').waitFor();
    await screenshot(page, 'sidebar.png');
  });

  it('finds "TypeORM" with its local search, and the result opens the transactions page', async () => {
    const page = await open('/');
    await page.locator('.VPNavBarSearch button').click();
    const input = page.locator('.VPLocalSearchBox input');
    await input.waitFor();
    await input.fill('TypeORM');
    const results = page.locator('.VPLocalSearchBox .result');
    await results.first().waitFor();
    const titles = await results.allInnerTexts();
    expect(titles.join('\n')).toMatch(/TypeORM/);
    await screenshot(page, 'search.png');
    const transactions = page.locator('.VPLocalSearchBox a.result[href*="guide/transactions"]').first();
    await transactions.click();
    await page.waitForURL('**/guide/transactions.html**');
    await page.locator('h2:has-text("TypeORM")').waitFor();
  });

  it('has an API page for DelayService, generated from the sources', async () => {
    const page = await open('/api/');
    await page.locator('.VPContent a:text-is("nestjs-delay")').first().click();
    await page.waitForURL('**/api/index/**');
    await page.locator('.VPContent a:has-text("DelayService")').first().click();
    await page.waitForURL('**/api/index/classes/DelayService.html');
    await page.locator('h1:has-text("DelayService")').waitFor();
    const text = await page.locator('.VPDoc').innerText();
    // The doc comment of the class, and its methods, as the sources have them.
    const source = readFileSync(path.join(ROOT, 'libs', 'delay', 'src', 'delay.service.ts'), 'utf8');
    expect(source).toContain('Schedules, moves, cancels and inspects delayed actions.');
    expect(text).toContain('Schedules, moves, cancels and inspects delayed actions.');
    for (const method of ['schedule()', 'cancel()', 'reschedule()', 'upsertRecurring()']) expect(text).toContain(method);
    await screenshot(page, 'api-delay-service.png');
  });

  it('shows the benchmark charts as SVG images', async () => {
    const page = await open('/benchmarks/');
    const charts = page.locator('.VPDoc img[src$=".svg"]');
    await charts.first().waitFor();
    expect(await charts.count()).toBeGreaterThanOrEqual(5);
    // Each one loaded and drawn.
    const widths = await charts.evaluateAll((images) => images.map((image) => (image as unknown as { naturalWidth: number }).naturalWidth));
    expect(widths.every((width) => width > 0)).toBe(true);
    await charts.first().scrollIntoViewIfNeeded();
    await screenshot(page, 'benchmark-charts.png');
  });

  describe('link check (npm run docs:check-links)', () => {
    it('passes on the repository: every internal link and anchor resolves', () => {
      const result = runLinkCheck([]);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(result.stdout).toContain('every internal link and anchor resolves');
    });

    it('fails on a copy of the site with a link to a missing anchor and one to a missing page, naming both', () => {
      const copy = mkdtempSync(path.join(tmpdir(), 'nestjs-delay-site-'));
      try {
        cpSync(DIST, copy, { recursive: true });
        const file = path.join(copy, 'guide', 'getting-started.html');
        const html = readFileSync(file, 'utf8');
        const broken = '<a href="../drivers/redis.html#no-such-section">x</a><a href="/guide/no-such-page.html">y</a></main>';
        expect(html).toContain('</main>');
        writeFileSync(file, html.replace('</main>', broken));
        const result = runLinkCheck(['--site', copy, '--no-markdown']);
        expect(result.status).toBe(1);
        expect(result.stderr).toContain('site /guide/getting-started.html: ../drivers/redis.html#no-such-section (no #no-such-section on /drivers/redis.html)');
        expect(result.stderr).toContain('site /guide/getting-started.html: /guide/no-such-page.html (no such page or file)');
        expect(result.stderr).toContain('2 broken link(s)');
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
    });

    it('fails on Markdown whose link names a missing file or heading, as GitHub would show it', () => {
      const copy = mkdtempSync(path.join(tmpdir(), 'nestjs-delay-md-'));
      try {
        mkdirSync(path.join(copy, 'docs', 'guide'), { recursive: true });
        writeFileSync(path.join(copy, 'docs', 'guide', 'recurring.md'), '# Recurring actions\n\n## The policies\n');
        writeFileSync(
          path.join(copy, 'README.md'),
          '# x\n\n[ok](docs/guide/recurring.md#the-policies) [gone](docs/guide/batching.md) [renamed](docs/guide/recurring.md#policies)\n\n```md\n[in code](nowhere.md)\n```\n',
        );
        const result = runLinkCheck(['--root', copy, '--no-site']);
        expect(result.status).toBe(1);
        expect(result.stderr.trim().split('\n')).toEqual([
          'broken link in README.md: docs/guide/batching.md (no such file)',
          'broken link in README.md: docs/guide/recurring.md#policies (no heading #policies in docs/guide/recurring.md)',
          '2 broken link(s)',
        ]);
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
    });
  });
});
