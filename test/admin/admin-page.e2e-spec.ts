import { Test } from '@nestjs/testing';
import { AdminGuardRequiredError, DelayError, DelayModule, InvalidAdminOptionsError } from 'nestjs-delay';
import { DelayAdminModule } from 'nestjs-delay/admin';
import request from 'supertest';
import { AdminTestApp, eventually, EXPORT, INVOICE, killAction, startAdminApp } from './support/admin-test-app';

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
