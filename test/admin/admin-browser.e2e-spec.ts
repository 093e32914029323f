import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Page } from 'playwright-core';
import { AdminTestApp, eventually, EXPORT, INVOICE, killAction, REPORTS, startAdminApp } from './support/admin-test-app';

/**
 * The admin page in a real headless Chromium (Debian's package; nothing is
 * downloaded). Every test drives it as a person would: follow links, press
 * the buttons the page renders, read what it shows.
 * ADMIN_SCREENSHOT=<file> also saves the phone-sized screenshot there.
 */
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

jest.setTimeout(20_000);

describe('admin page in a browser', () => {
  let target: AdminTestApp;
  let browser: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install chromium), or set CHROMIUM_BIN`);
    profile = mkdtempSync(join(tmpdir(), 'nestjs-delay-chromium-'));
    browser = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true, offline: false });
    // A browser's first start on a loaded two-core machine (the suite's longest files start with it) took over 20 s.
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  beforeEach(async () => {
    target = await startAdminApp();
    await target.delay.schedule(INVOICE, 'inv-1', { delay: '1h', payload: { customer: 'acme', cents: 1250 } });
    await killAction(target, EXPORT, 'nightly-2026-11-23', { format: 'csv', rows: 18_204 });
  });

  afterEach(async () => {
    for (const page of browser.pages()) await page.close();
    await target.app.close();
  });

  async function open(role: 'admin' | 'viewer'): Promise<Page> {
    const page = await browser.newPage();
    await page.setExtraHTTPHeaders({ 'x-role': role });
    return page;
  }

  it('lists the topics, shows a dead action with its error, and a redrive from the page runs it', async () => {
    const page = await open('admin');
    await page.goto(`${target.baseUrl}/admin/delays`);
    await expectVisible(page, `a:has-text("${INVOICE}")`);
    const exportRow = page.locator('tr', { has: page.locator(`code:text-is("${EXPORT}")`) });
    await exportRow.locator('td[data-label="Dead"] a').click();
    await page.waitForURL(`**/admin/delays/topics/${EXPORT}/dead`);
    const deadRow = page.locator('tr', { has: page.locator('code:text-is("nightly-2026-11-23")') });
    // The error is shown as text: its markup is not interpreted.
    expect(await deadRow.locator('td.error').innerText()).toBe('<b>SMTP 550</b> mailbox of nightly-2026-11-23 unavailable');

    target.handlers.failing.delete('nightly-2026-11-23');
    await deadRow.locator('button:text-is("Redrive")').click();
    await page.waitForURL(/done=redrive/);
    expect(await page.locator('.notice').innerText()).toBe('The dead action is due again, now.');
    await eventually('the redriven export ran', () => target.handlers.ranOk(EXPORT, 'nightly-2026-11-23'));
    await page.reload();
    await expectVisible(page, 'text=No dead actions.');
  });

  it('pauses a recurring schedule from its row: the row then shows it paused, with Resume', async () => {
    await target.delay.upsertRecurring(REPORTS, 'weekly', { cron: '0 9 * * 1', timeZone: 'America/New_York' });
    const page = await open('admin');
    await page.goto(`${target.baseUrl}/admin/delays`);
    await page.locator('tr', { has: page.locator(`code:text-is("${REPORTS}")`) }).locator('a:text-is("recurring")').click();
    await page.waitForURL(`**/admin/delays/topics/${REPORTS}/schedules`);
    const row = page.locator('tr', { has: page.locator('code:text-is("weekly")') });
    expect(await row.locator('td[data-label="Recurrence"]').innerText()).toBe('0 9 * * 1 America/New_York');
    await row.locator('button:text-is("Pause")').click();
    await page.waitForURL(/done=schedule-pause/);
    await expectVisible(page, 'tr:has(code:text-is("weekly")) .badge.paused');
    await expectVisible(page, 'tr:has(code:text-is("weekly")) button:text-is("Resume")');
    expect((await target.delay.getRecurring(REPORTS, 'weekly'))?.paused).toBe(true);
  });

  it('a write the guard does not allow is refused with 403, and nothing changes', async () => {
    const page = await open('viewer');
    await page.goto(`${target.baseUrl}/admin/delays/topics/${EXPORT}/dead`);
    const [response] = await Promise.all([page.waitForResponse((answer) => answer.request().method() === 'POST'), page.locator('button:text-is("Redrive")').click()]);
    expect(response.status()).toBe(403);
    await expectVisible(page, 'text=Only an admin may change delayed actions.');
    expect((await target.delay.listDead(EXPORT)).total).toBe(1);
  });

  it("a form on another site that posts to the page is refused, though the browser sends the admin's credentials", async () => {
    const page = await open('admin');
    const form = `<form method="post" action="${target.baseUrl}/admin/delays/topics/${EXPORT}/redrive"><input type="hidden" name="id" value="nightly-2026-11-23"><button type="submit">Win a prize</button></form>`;
    await page.route('http://elsewhere.test/**', (route) => route.fulfill({ contentType: 'text/html', body: `<!doctype html><title>elsewhere</title>${form}` }));
    await page.goto('http://elsewhere.test/prize');
    target.handlers.failing.delete('nightly-2026-11-23');
    const [response] = await Promise.all([page.waitForResponse((answer) => answer.request().method() === 'POST'), page.locator('button').click()]);
    expect(response.status()).toBe(403);
    await expectVisible(page, 'text=A write from another site is refused');
    expect((await target.delay.listDead(EXPORT)).total).toBe(1);
  });

  it('fits a phone: no sideways scrolling, rows as cards', async () => {
    const page = await open('admin');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${target.baseUrl}/admin/delays/topics/${EXPORT}/dead`);
    // Evaluated in the page, where document and window exist (the suite compiles without DOM types).
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    // The column headings give way to a label above each cell.
    expect(await page.locator('thead').isVisible()).toBe(false);
    const shot = await page.screenshot({ fullPage: true });
    expect(shot.subarray(1, 4).toString()).toBe('PNG');
    expect(shot.readUInt32BE(16)).toBe(390);
    const destination = process.env.ADMIN_SCREENSHOT;
    if (destination) writeFileSync(destination, shot);
    else expect(readFileSync(join(__dirname, '../../docs/admin-page.png')).subarray(1, 4).toString()).toBe('PNG');
  });
});

async function expectVisible(page: Page, selector: string): Promise<void> {
  await page.locator(selector).first().waitFor({ state: 'visible', timeout: 10_000 });
}
