import { Test } from '@nestjs/testing';
import { AdminGuardRequiredError, DelayError, DelayModule, InvalidAdminOptionsError } from 'nestjs-delay';
import { DelayAdminModule } from 'nestjs-delay/admin';
import request from 'supertest';
import { AdminTestApp, DIGEST, eventually, EXPORT, INVOICE, killAction, REPORTS, startAdminApp } from './support/admin-test-app';

describe('admin page (HTTP)', () => {
  let target: AdminTestApp | undefined;

  afterEach(async () => {
    await target?.app.close();
    target = undefined;
  });

  it('lists topics with their counts, from topics(), as a self-contained HTML page', async () => {
    target = await startAdminApp();
    await target.delay.schedule(INVOICE, 'inv-1', { delay: '1h' });
    await target.delay.schedule(INVOICE, 'inv-2', { delay: '2h' });
    await killAction(target, EXPORT, 'exp-1');

    const response = await request(target.baseUrl).get('/admin/delays').expect(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    // Nothing fetched from anywhere: no script, no external stylesheet, no image.
    expect(response.text).not.toMatch(/<script|<link|<img|https?:\/\//);
    const row = (topic: string): string => response.text.split('<tr>').find((part) => part.includes(`<code>${topic}</code>`)) ?? '';
    expect(row(INVOICE)).toMatch(/data-label="Waiting" class="num">2<.*data-label="Running" class="num">0<.*data-label="Dead" class="num">0</s);
    expect(row(EXPORT)).toMatch(/data-label="Waiting" class="num">0<.*data-label="Dead" class="num"><a [^>]+>1</s);
  });

  it('shows a dead action with its error and payload, escaped', async () => {
    target = await startAdminApp();
    await killAction(target, INVOICE, 'acme<1>', { note: '</code><script>alert(1)</script>' });

    const page = await request(target.baseUrl).get(`/admin/delays/topics/${INVOICE}/dead`).expect(200);
    expect(page.text).toContain('&lt;b&gt;SMTP 550&lt;/b&gt; mailbox of acme&lt;1&gt; unavailable');
    expect(page.text).toContain('&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).not.toContain('<script>');
    expect(page.text).toContain('name="id" value="acme&lt;1&gt;"');
  });

  it('pages pending actions: one page at a time, in due order, with the total', async () => {
    target = await startAdminApp({ pageSize: 50 });
    await target.delay.scheduleMany(
      INVOICE,
      Array.from({ length: 120 }, (_, i) => ({ key: `k${String(i).padStart(3, '0')}`, delay: `${i + 1}m` })),
    );
    const third = await request(target.baseUrl).get(`/admin/delays/topics/${INVOICE}?page=3`).expect(200);
    const keys = [...third.text.matchAll(/data-label="Key"><code>(k\d{3})<\/code>/g)].map((match) => match[1]);
    expect(keys).toEqual(Array.from({ length: 20 }, (_, i) => `k${100 + i}`));
    expect(third.text).toContain('101–120 of 120');
    expect(third.text).toContain('← previous');
    expect(third.text).not.toContain('next →');
    // A page number that is not one is page 1, not an error.
    const first = await request(target.baseUrl).get(`/admin/delays/topics/${INVOICE}?page=abc`).expect(200);
    expect(first.text).toContain('1–50 of 120');
  });

  it('redrives a dead action from its form: 303 back to the dead list, and the handler runs it', async () => {
    target = await startAdminApp();
    await killAction(target, INVOICE, 'inv-9');
    target.handlers.failing.delete('inv-9');

    const response = await request(target.baseUrl).post(`/admin/delays/topics/${INVOICE}/redrive`).set('x-role', 'admin').set('origin', target.baseUrl).type('form').send({ id: 'inv-9' }).expect(303);
    expect(response.headers.location).toBe(`/admin/delays/topics/${INVOICE}/dead?done=redrive`);
    const running = target;
    await eventually('the redriven action ran', () => running.handlers.ranOk(INVOICE, 'inv-9'));
    expect((await target.delay.listDead(INVOICE)).total).toBe(0);
    const after = await request(target.baseUrl).get(response.headers.location).expect(200);
    expect(after.text).toContain('The dead action is due again, now.');
  });

  it('runs a waiting action now, cancels one, and pauses and resumes a topic', async () => {
    target = await startAdminApp();
    await target.delay.schedule(INVOICE, 'soon', { delay: '1h' });
    await target.delay.schedule(INVOICE, 'never', { delay: '1h' });
    const post = (verb: string, form: Record<string, string>) =>
      request((target as AdminTestApp).baseUrl).post(`/admin/delays/topics/${INVOICE}/${verb}`).set('x-role', 'admin').set('origin', (target as AdminTestApp).baseUrl).type('form').send(form).expect(303);

    await post('run', { key: 'soon' });
    const running = target;
    await eventually('run now ran the action', () => running.handlers.ranOk(INVOICE, 'soon'));
    expect((await post('cancel', { key: 'never' })).headers.location).toBe(`/admin/delays/topics/${INVOICE}?done=cancel`);
    expect(await target.delay.get(INVOICE, 'never')).toBeNull();
    expect((await post('cancel', { key: 'never' })).headers.location).toContain('done=cancel-missing');

    expect((await post('pause', { back: 'list' })).headers.location).toBe('/admin/delays?done=pause');
    expect(await target.delay.isPaused(INVOICE)).toBe(true);
    const list = await request(target.baseUrl).get('/admin/delays').expect(200);
    expect(list.text).toContain('<span class="badge paused">paused</span>');
    await post('resume', {});
    expect(await target.delay.isPaused(INVOICE)).toBe(false);
  });

  it("refuses a write the guard does not allow with 403 and changes nothing", async () => {
    target = await startAdminApp();
    await killAction(target, INVOICE, 'inv-3');
    const refused = await request(target.baseUrl).post(`/admin/delays/topics/${INVOICE}/redrive`).set('x-role', 'viewer').type('form').send({ id: 'inv-3' }).expect(403);
    expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(refused.text).toContain('Only an admin may change delayed actions.');
    expect((await target.delay.listDead(INVOICE)).total).toBe(1);
  });

  describe('a write must come from this site: Origin names this host, or Sec-Fetch-Site says same-origin', () => {
    const cancel = (headers: Record<string, string>) => {
      const running = target as AdminTestApp;
      let post = request(running.baseUrl).post(`/admin/delays/topics/${INVOICE}/cancel`).set('x-role', 'admin');
      for (const [name, value] of Object.entries(headers)) post = post.set(name, value);
      return post.type('form').send({ key: 'inv-4' });
    };

    it.each<[string, (baseUrl: string) => Record<string, string>, string]>([
      ['Origin: null (a sandboxed frame, a redirect)', () => ({ origin: 'null' }), 'A write with "Origin: null" is refused'],
      ['no Origin and no Sec-Fetch-Site (a script, an old client)', () => ({}), 'A write without an Origin header is refused'],
      ['another site as Origin', () => ({ origin: 'https://evil.example' }), 'A write from another site is refused (Origin https://evil.example is not this host)'],
      ['Sec-Fetch-Site: cross-site, whatever the Origin says', (baseUrl) => ({ origin: baseUrl, 'sec-fetch-site': 'cross-site' }), 'A write from another site is refused (Sec-Fetch-Site: cross-site)'],
      ['Sec-Fetch-Site: cross-site with Origin: null', () => ({ origin: 'null', 'sec-fetch-site': 'cross-site' }), 'Sec-Fetch-Site: cross-site'],
      ['Sec-Fetch-Site: same-site (a sibling subdomain) without Origin', () => ({ 'sec-fetch-site': 'same-site' }), 'Sec-Fetch-Site: same-site'],
      ['a malformed Origin', () => ({ origin: 'not a url' }), 'A write with a malformed Origin header is refused'],
    ])('refuses %s with a 403 page, even for an admin, and changes nothing', async (_case, headers, message) => {
      target = await startAdminApp();
      await target.delay.schedule(INVOICE, 'inv-4', { delay: '1h' });
      const refused = await cancel(headers(target.baseUrl)).expect(403);
      expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(refused.text).toContain(message.replace(/"/g, '&quot;'));
      expect(await target.delay.get(INVOICE, 'inv-4')).not.toBeNull();
    });

    it.each<[string, (baseUrl: string) => Record<string, string>]>([
      ['Origin naming this host', (baseUrl) => ({ origin: baseUrl })],
      ['Origin naming this host, with Sec-Fetch-Site: same-origin', (baseUrl) => ({ origin: baseUrl, 'sec-fetch-site': 'same-origin' })],
      ['no Origin, with Sec-Fetch-Site: same-origin', () => ({ 'sec-fetch-site': 'same-origin' })],
    ])('accepts %s', async (_case, headers) => {
      target = await startAdminApp();
      await target.delay.schedule(INVOICE, 'inv-4', { delay: '1h' });
      await cancel(headers(target.baseUrl)).expect(303);
      expect(await target.delay.get(INVOICE, 'inv-4')).toBeNull();
    });
  });

  it('sends the same security headers on an error page as on a page: no script, no framing, no <base>', async () => {
    target = await startAdminApp();
    const page = await request(target.baseUrl).get('/admin/delays').expect(200);
    const error = await request(target.baseUrl).get(`/admin/delays/topics/${encodeURIComponent('bad topic')}`).expect(400);
    for (const response of [page, error]) {
      expect(response.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
      expect(response.headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin', 'cache-control': 'no-store' });
    }
  });

  it('read-only by default: no forms, and every write is 403', async () => {
    target = await startAdminApp({ writable: false, guards: [] });
    await target.delay.schedule(INVOICE, 'inv-5', { delay: '1h' });
    const page = await request(target.baseUrl).get(`/admin/delays/topics/${INVOICE}`).expect(200);
    expect(page.text).toContain('inv-5');
    expect(page.text).not.toContain('<form method="post"');
    expect(page.text).not.toContain('method="post"');
    await request(target.baseUrl).post(`/admin/delays/topics/${INVOICE}/cancel`).type('form').send({ key: 'inv-5' }).expect(403);
    expect(await target.delay.get(INVOICE, 'inv-5')).not.toBeNull();
  });

  it('answers bad input with a 400 page: an invalid topic, a form without its key', async () => {
    target = await startAdminApp();
    const badTopic = await request(target.baseUrl).get(`/admin/delays/topics/${encodeURIComponent(' ')}`).expect(400);
    expect(badTopic.text).toContain('<div class="problem">');
    await request(target.baseUrl).post(`/admin/delays/topics/${INVOICE}/cancel`).set('x-role', 'admin').set('origin', target.baseUrl).type('form').send({}).expect(400);
    await request(target.baseUrl).post(`/admin/delays/topics/${INVOICE}/explode`).set('x-role', 'admin').set('origin', target.baseUrl).type('form').send({}).expect(404);
  });

  it('builds its links from where it is mounted, global prefix included', async () => {
    target = await startAdminApp({ path: '/ops/queues/' }, 'api');
    await target.delay.schedule(INVOICE, 'inv-6', { delay: '1h' });
    const list = await request(target.baseUrl).get('/api/ops/queues').expect(200);
    expect(list.text).toContain(`href="/api/ops/queues/topics/${INVOICE}"`);
    const response = await request(target.baseUrl).post(`/api/ops/queues/topics/${INVOICE}/cancel`).set('x-role', 'admin').set('origin', target.baseUrl).type('form').send({ key: 'inv-6' }).expect(303);
    expect(response.headers.location).toBe(`/api/ops/queues/topics/${INVOICE}?done=cancel`);
  });

  describe('recurring schedules', () => {
    const schedulesPath = (topic: string): string => `/admin/delays/topics/${encodeURIComponent(topic)}/schedules`;
    /** A new schedule's tick is due at once; once it has run, the schedule's next run is its next occurrence. */
    const planned = async (topic: string, key: string): Promise<Date> => {
      const running = target as AdminTestApp;
      await eventually(`${topic}/${key} has its next run planned`, async () => ((await running.delay.getRecurring(topic, key))?.nextRunAt?.getTime() ?? 0) > Date.now());
      return (await running.delay.getRecurring(topic, key))?.nextRunAt as Date;
    };
    const post = (verb: string, key: string, origin?: string) =>
      request((target as AdminTestApp).baseUrl).post(`/admin/delays/topics/${REPORTS}/${verb}`).set('x-role', 'admin').set('origin', origin ?? (target as AdminTestApp).baseUrl).type('form').send({ key });
    const row = (text: string, key: string): string => text.split('<tr>').find((part) => part.includes(`data-label="Key"><code>${key}</code>`)) ?? '';

    it('lists a schedule made with upsertRecurring and one declared with @Recurring, with their next runs; the topics list marks recurring topics', async () => {
      target = await startAdminApp();
      await target.delay.upsertRecurring(REPORTS, 'weekly', { cron: '0 9 * * 1', timeZone: 'America/New_York' });
      await target.delay.upsertRecurring(REPORTS, 'hourly', { every: '90m' });
      await target.delay.schedule(INVOICE, 'inv-1', { delay: '1h' });
      const weeklyNext = await planned(REPORTS, 'weekly');
      const hourlyNext = await planned(REPORTS, 'hourly');
      const digestNext = await planned(DIGEST, 'default');

      const list = await request(target.baseUrl).get('/admin/delays').expect(200);
      const topicRow = (topic: string): string => list.text.split('<tr>').find((part) => part.includes(`<code>${topic}</code>`)) ?? '';
      expect(topicRow(REPORTS)).toContain(`<a class="badge recurring" href="${schedulesPath(REPORTS)}">recurring</a>`);
      expect(topicRow(DIGEST)).toContain('badge recurring');
      expect(topicRow(INVOICE)).not.toContain('badge recurring');

      const reports = await request(target.baseUrl).get(schedulesPath(REPORTS)).expect(200);
      expect(reports.text).toContain('2 schedules from the first');
      expect(row(reports.text, 'weekly')).toContain('<code>0 9 * * 1</code> <span class="muted">America/New_York</span>');
      expect(row(reports.text, 'weekly')).toContain(weeklyNext.toISOString());
      expect(row(reports.text, 'weekly')).toContain('per key');
      expect(row(reports.text, 'weekly')).toContain('none yet');
      expect(row(reports.text, 'hourly')).toContain('every <code>1h 30m</code>');
      expect(row(reports.text, 'hourly')).toContain(hourlyNext.toISOString());
      expect(reports.text).toMatch(/name="key" value="weekly"><button type="submit">Pause<\/button>/);

      const digest = await request(target.baseUrl).get(schedulesPath(DIGEST)).expect(200);
      expect(row(digest.text, 'default')).toContain('<code>0 3 * * *</code> <span class="muted">Europe/Paris</span>');
      expect(row(digest.text, 'default')).toContain(digestNext.toISOString());
      expect(row(digest.text, 'default')).toContain('in code');
      // The topic's own page links to its schedules; a one-off topic's does not.
      const digestPending = (await request(target.baseUrl).get(`/admin/delays/topics/${DIGEST}`).expect(200)).text;
      expect(digestPending).toContain(`href="${schedulesPath(DIGEST)}">schedules</a>`);
      // The schedule's tick among the pending actions links to the schedules page instead of offering Cancel / Run now (refused for a schedule's key).
      expect(row(digestPending, 'default')).toContain(`<a href="${schedulesPath(DIGEST)}">schedule</a>`);
      expect(row(digestPending, 'default')).not.toContain('Cancel');
      expect((await request(target.baseUrl).get(`/admin/delays/topics/${INVOICE}`).expect(200)).text).not.toContain('/schedules"');
    });

    it('pages schedules by key, reading only the page: next after the last key shown, back to the first; a bad key is a 400 that changes nothing', async () => {
      target = await startAdminApp({ pageSize: 2 });
      for (const key of ['a', 'b', 'c']) await target.delay.upsertRecurring(REPORTS, key, { every: '1h' });
      const keys = (text: string): string[] => [...text.matchAll(/data-label="Key"><code>(\w)<\/code>/g)].map((match) => match[1]);
      const first = await request(target.baseUrl).get(schedulesPath(REPORTS)).expect(200);
      expect(keys(first.text)).toEqual(['a', 'b']);
      expect(first.text).toContain(`href="${schedulesPath(REPORTS)}?after=b">next →</a>`);
      const second = await request(target.baseUrl).get(`${schedulesPath(REPORTS)}?after=b`).expect(200);
      expect(keys(second.text)).toEqual(['c']);
      expect(second.text).toContain('1 schedule after <code>b</code>');
      expect(second.text).toContain(`href="${schedulesPath(REPORTS)}">← first</a>`);
      expect(second.text).not.toContain('next →');
      const refused = await request(target.baseUrl).get(`${schedulesPath(REPORTS)}?after=${encodeURIComponent('a\u001eb')}`).expect(400);
      expect(refused.text).toContain('Invalid page');
      expect((await target.delay.listRecurring(REPORTS)).map((schedule) => schedule.key)).toEqual(['a', 'b', 'c']);
    });

    it('pauses, resumes and runs a schedule now through the forms; a cross-site post is refused and changes nothing', async () => {
      target = await startAdminApp();
      await target.delay.upsertRecurring(REPORTS, 'weekly', { cron: '0 9 * * 1', timeZone: 'America/New_York' });
      await planned(REPORTS, 'weekly');

      expect((await post('pause-schedule', 'weekly').expect(303)).headers.location).toBe(`${schedulesPath(REPORTS)}?done=schedule-pause`);
      expect((await target.delay.getRecurring(REPORTS, 'weekly'))?.paused).toBe(true);
      const paused = await request(target.baseUrl).get(`${schedulesPath(REPORTS)}?done=schedule-pause`).expect(200);
      expect(paused.text).toContain('The schedule is paused');
      expect(row(paused.text, 'weekly')).toContain('<span class="badge paused">paused</span>');
      expect(row(paused.text, 'weekly')).toContain('>Resume</button>');

      const refused = await post('resume-schedule', 'weekly', 'https://evil.example').expect(403);
      expect(refused.text).toContain('A write from another site is refused');
      expect((await target.delay.getRecurring(REPORTS, 'weekly'))?.paused).toBe(true);

      expect((await post('resume-schedule', 'weekly').expect(303)).headers.location).toBe(`${schedulesPath(REPORTS)}?done=schedule-resume`);
      expect((await target.delay.getRecurring(REPORTS, 'weekly'))?.paused).toBe(false);

      expect((await post('run-schedule', 'weekly').expect(303)).headers.location).toBe(`${schedulesPath(REPORTS)}?done=schedule-run`);
      const running = target;
      await eventually('the extra occurrence ran and was recorded', async () => (await running.delay.getRecurring(REPORTS, 'weekly'))?.lastRun?.outcome === 'succeeded');
      expect(running.handlers.runs.filter((run) => run.topic === REPORTS && run.key === 'weekly')).toHaveLength(1);
      expect(row((await request(target.baseUrl).get(schedulesPath(REPORTS)).expect(200)).text, 'weekly')).toContain('<span class="badge succeeded">succeeded</span>');

      expect((await post('pause-schedule', 'gone').expect(303)).headers.location).toContain('done=schedule-unchanged');
      expect((await post('run-schedule', 'gone').expect(303)).headers.location).toContain('done=schedule-missing');
    });

    it('escapes a key that holds markup, in the cell and in the form', async () => {
      target = await startAdminApp();
      const key = '"><img src=x onerror=alert(1)>';
      await target.delay.upsertRecurring(REPORTS, key, { every: '1h' });
      const page = await request(target.baseUrl).get(schedulesPath(REPORTS)).expect(200);
      expect(page.text).toContain('<code>&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</code>');
      expect(page.text).toContain('name="key" value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"');
      expect(page.text).not.toContain('<img');
      // What the form posts back is the key itself.
      await post('pause-schedule', key).expect(303);
      expect((await target.delay.getRecurring(REPORTS, key))?.paused).toBe(true);
    });

    it('says why an occurrence was skipped: the previous one still running, due since when', async () => {
      target = await startAdminApp();
      target.handlers.reportHoldMs = 600;
      await target.delay.upsertRecurring(REPORTS, 'slow', { every: '200ms' });
      const running = target;
      let cell = '';
      await eventually('a skipped last run on the page', async () => {
        cell = row((await request(running.baseUrl).get(schedulesPath(REPORTS)).expect(200)).text, 'slow');
        return cell.includes('badge skipped');
      });
      // The occurrence in the way, by its instant, still running, due since when.
      expect(cell).toMatch(/, \d{4}-\d\d-\d\dT[\d:.]+Z still running \(due since \d{4}-\d\d-\d\dT[\d:.]+Z\)/);
      await eventually('a skipped last run through getRecurring', async () => (await running.delay.getRecurring(REPORTS, 'slow'))?.lastRun?.outcome === 'skipped');
      const skipped = (await target.delay.getRecurring(REPORTS, 'slow'))?.lastRun;
      expect(skipped?.blockedBy).toMatchObject({ state: 'running', attempt: 1 });
      expect(skipped?.blockedBy?.occurrence.startsWith('slow\u001e')).toBe(true);
      await target.delay.removeRecurring(REPORTS, 'slow');
    });
  });

  it('refuses to start writable without a guard, and names bad options', () => {
    expect(() => DelayAdminModule.register({ path: 'admin/delays', writable: true })).toThrow(AdminGuardRequiredError);
    let error: unknown;
    try {
      DelayAdminModule.register({ path: 'admin/delays', writable: true, guards: [] });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(DelayError);
    expect((error as DelayError).code).toBe('ERR_DELAY_ADMIN_GUARD_REQUIRED');
    expect((error as Error).message).toContain('guards: [YourAdminGuard]');
    expect(() => DelayAdminModule.register({ path: 'a b', pageSize: 0 })).toThrow(InvalidAdminOptionsError);
    expect(() => DelayAdminModule.register({ path: 'a b', pageSize: 0 })).toThrow(/path must be[\s\S]*pageSize must be/);
  });

  it('an app that mounts it writable with no guard does not start', async () => {
    const build = () =>
      Test.createTestingModule({ imports: [DelayModule.forRoot({}), DelayAdminModule.register({ path: 'admin', writable: true })] }).compile();
    expect(build).toThrow(AdminGuardRequiredError);
  });
});
