import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { DriverUnavailableError } from 'nestjs-delay';
import { LookupAddress } from 'node:dns';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { DelayErrorFilter } from '../../apps/shop/src/common/delay-error.filter';
import { HostResolver } from '../../apps/shop/src/merchants/host-resolver';
import { WebhookDelivery } from '../../apps/shop/src/merchants/webhook-delivery';
import { ADMIN_API, override, ShopEnv, ShopTestApp, startShop, TEST_ADMIN_TOKEN } from './shop-test-app';

/**
 * What strangers must not be able to do to the shop: use the JSON admin,
 * change a merchant's webhook, make the shop call its own network, or get a
 * 500 and a stack trace out of it.
 */

/** A HostResolver whose answers the test gives, one list per call (the last repeats); it counts the calls. */
class ScriptedResolver {
  calls = 0;
  constructor(private readonly answers: Record<string, string[][]>) {}

  async resolve(hostname: string): Promise<LookupAddress[]> {
    const answers = this.answers[hostname];
    if (answers === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const addresses = answers[Math.min(this.calls, answers.length - 1)] ?? [];
    this.calls++;
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  }
}

describe('Shop security (e2e)', () => {
  let shop: ShopTestApp | undefined;
  let other: Server | undefined;

  afterEach(async () => {
    await shop?.app.close();
    shop = undefined;
    if (other) await new Promise((resolve) => other?.close(resolve));
    other = undefined;
  });

  async function start(env: ShopEnv = {}, resolver?: ScriptedResolver): Promise<ShopTestApp> {
    shop = await startShop({ listen: true, env: { ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...env }, ...(resolver ? { overrides: [override(HostResolver, resolver)] } : {}) });
    return shop;
  }

  async function merchantToken(app: ShopTestApp, merchantId: string): Promise<string> {
    const { body } = await app.http.post(`/api/admin/merchants/${merchantId}/token`).set(ADMIN_API).expect(201);
    return (body as { token: string }).token;
  }

  describe('the JSON admin (/api/admin) needs the ADMIN_TOKEN as a bearer token, for reads too', () => {
    it('refuses no credentials (401), Basic credentials, another token (403), and accepts the token', async () => {
      const app = await start();
      const noCredentials = await app.http.get('/api/admin/delays').expect(401);
      expect(noCredentials.headers['www-authenticate']).toBe('Bearer realm="shop admin API"');
      expect(noCredentials.body).toMatchObject({ message: 'Send the ADMIN_TOKEN as "Authorization: Bearer <ADMIN_TOKEN>".' });
      // A cross-site form post carries what the browser has saved (Basic credentials), never a bearer token.
      const basic = `Basic ${Buffer.from(`ops:${TEST_ADMIN_TOKEN}`).toString('base64')}`;
      await app.http.post('/api/admin/delays/order.unpaid/dead/redrive').set('authorization', basic).set('origin', 'https://evil.example').expect(401);
      await app.http.get('/api/admin/delays/order.unpaid').set('authorization', 'Bearer not-the-token').expect(403, { statusCode: 403, message: 'Wrong admin token.', error: 'Forbidden' });
      await app.http.post('/api/admin/merchants/leafy/token').expect(401);
      // The one topic a fresh shop has: the seeded merchants' daily digest schedules.
      await app.http
        .get('/api/admin/delays')
        .set(ADMIN_API)
        .expect(200)
        .expect(({ body }) => expect(body).toEqual([expect.objectContaining({ topic: 'merchant.digest', waiting: 2, dead: 0 })]));
    });

    it('is closed to everyone when the shop has no ADMIN_TOKEN', async () => {
      const app = await start({ ADMIN_TOKEN: undefined });
      const { body } = await app.http.get('/api/admin/delays/order.unpaid/dead').set(ADMIN_API).expect(403);
      expect((body as { message: string }).message).toContain('The admin API is closed: start the shop with ADMIN_TOKEN set');
      await app.http.post('/api/admin/delays/order.unpaid/dead/redrive').set(ADMIN_API).expect(403);
    });
  });

  describe("a merchant's webhook subscription needs that merchant's token", () => {
    it('refuses no token (401), another merchant\'s and a replaced one (403); the listing shows no URL', async () => {
      const app = await start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
      const url = `${app.baseUrl}/webhook-receiver/leafy`;
      const unauthorised = await app.http.put('/merchants/leafy/webhook').send({ url }).expect(401);
      expect(unauthorised.headers['www-authenticate']).toBe('Bearer realm="shop merchants"');
      expect((unauthorised.body as { message: string }).message).toContain('POST /api/admin/merchants/leafy/token');
      // No token issued yet: nothing opens the subscription.
      await app.http.put('/merchants/leafy/webhook').set('authorization', 'Bearer guess').send({ url }).expect(403);

      const potters = await merchantToken(app, 'potters');
      const first = await merchantToken(app, 'leafy');
      const current = await merchantToken(app, 'leafy');
      expect(current).not.toBe(first);
      for (const token of [potters, first]) {
        const { body } = await app.http.put('/merchants/leafy/webhook').set('authorization', `Bearer ${token}`).send({ url }).expect(403);
        expect(body).toMatchObject({ message: 'This token does not authorise merchant "leafy".' });
      }
      for (const path of ['/merchants/leafy/webhook', '/merchants/leafy/webhook/deliveries']) await app.http.get(path).expect(401);
      await app.http.delete('/merchants/leafy/webhook').expect(401);
      await app.http.get('/merchants/leafy/webhook').set('authorization', `Bearer ${current}`).expect(404);

      await app.http.put('/merchants/leafy/webhook').set('authorization', `Bearer ${current}`).send({ url }).expect(200);
      await app.http.get('/merchants/leafy/webhook').set('authorization', `Bearer ${current}`).expect(200).expect(({ body }) => expect(body).toMatchObject({ url }));
      const { body: merchants } = await app.http.get('/merchants').expect(200);
      expect(merchants).toEqual([
        { id: 'leafy', name: 'Leafy Teas', timeZone: 'UTC', subscribed: true },
        { id: 'potters', name: 'The Potters', timeZone: 'UTC', subscribed: false },
      ]);
    });
  });

  describe('webhooks go to public addresses only', () => {
    it.each([
      ['http://127.0.0.1:6379/', 'loopback (127.0.0.0/8)'],
      ['http://localhost:6379/', 'localhost resolves to 127.0.0.1, which is loopback'],
      // The URL check refuses these before any address is looked at.
      ['http://2130706433:6379/', 'url must be an http:// or https:// URL'],
      ['http://0x7f.1/', 'url must be an http:// or https:// URL'],
      ['http://0.0.0.0:8080/', '"this network" (0.0.0.0/8)'],
      ['http://10.1.2.3/hook', 'private (10.0.0.0/8)'],
      ['http://172.16.0.1/hook', 'private (172.16.0.0/12)'],
      ['http://192.168.1.1/hook', 'private (192.168.0.0/16)'],
      ['http://100.64.0.1/hook', 'shared carrier NAT'],
      ['http://169.254.169.254/latest/meta-data/', 'link-local (169.254.0.0/16)'],
      ['http://[::1]:6379/', 'loopback (::1)'],
      ['http://[::]:6379/', 'unspecified (::)'],
      ['http://[::ffff:127.0.0.1]:6379/', 'IPv4-mapped'],
      ['http://[::ffff:7f00:1]:6379/', 'IPv4-mapped'],
      ['http://[::ffff:a00:1]/', 'IPv4-mapped'],
      ['http://[64:ff9b::a00:1]/', 'NAT64'],
      ['http://[fd12:3456::1]/', 'unique-local (fc00::/7)'],
      ['http://[fe80::1]/', 'link-local (fe80::/10)'],
      ['http://[2002:7f00:1::1]/', '6to4'],
      ['http://224.0.0.1/', 'multicast'],
      ['http://255.255.255.255/', 'reserved or broadcast'],
    ])('refuses %s with a 400, and subscribes nothing', async (url, reason) => {
      const app = await start();
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      const { body } = await app.http.put('/merchants/leafy/webhook').set(auth).send({ url }).expect(400);
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      const message = String((body as { message: string | string[] }).message);
      if (!reason.startsWith('url must')) expect(message).toContain(`Webhook URL ${url} refused`);
      expect(message).toContain(reason);
      await app.http.get('/merchants/leafy/webhook').set(auth).expect(404);
    });

    it('refuses a name of which any address is internal, and accepts a public one', async () => {
      const resolver = new ScriptedResolver({ 'mixed.test': [['8.8.8.8', '10.0.0.5']], 'public.test': [['8.8.4.4', '2001:4860:4860::8888']] });
      const app = await start({}, resolver);
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      const { body } = await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: 'https://mixed.test/hook' }).expect(400);
      expect((body as { message: string }).message).toContain('mixed.test resolves to 10.0.0.5, which is private (10.0.0.0/8)');
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: 'https://no-such-host.test/hook' }).expect(400, {
        statusCode: 400,
        error: 'Bad Request',
        message: 'Webhook URL https://no-such-host.test/hook refused: no-such-host.test does not resolve (ENOTFOUND)',
      });
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: 'https://public.test/hook' }).expect(200);
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: 'http://8.8.8.8/hook' }).expect(200);
    });

    it('checks again at every delivery: a name that now resolves to loopback gets nothing (DNS rebinding)', async () => {
      const resolver = new ScriptedResolver({ 'flip.test': [['8.8.8.8'], ['127.0.0.1']] });
      const app = await start({}, resolver);
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      const port = (app.app.getHttpServer().address() as AddressInfo).port;
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: `http://flip.test:${port}/webhook-receiver/leafy` }).expect(200);
      await placeOrder(app);
      await app.clock.advance(app.config.webhookWindowMs);

      const { body } = await app.http.get('/merchants/leafy/webhook/deliveries').set(auth).expect(200);
      expect(body).toMatchObject([{ attempt: 1, outcome: 'failed' }]);
      expect((body as WebhookDelivery[])[0]?.error).toContain('flip.test resolves to 127.0.0.1, which is loopback');
      await app.http.get('/webhook-receiver/leafy').expect(200, []);
    });

    it('connects to the address it checked, with no second lookup of the name', async () => {
      // The operating system cannot resolve pinned.test: only a connection to the checked address reaches the receiver.
      const resolver = new ScriptedResolver({ 'pinned.test': [['127.0.0.1']] });
      const app = await start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' }, resolver);
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      const port = (app.app.getHttpServer().address() as AddressInfo).port;
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: `http://pinned.test:${port}/webhook-receiver/leafy` }).expect(200);
      await placeOrder(app);
      await app.clock.advance(app.config.webhookWindowMs);

      await app.http.get('/merchants/leafy/webhook/deliveries').set(auth).expect(200).expect(({ body }) => expect(body).toMatchObject([{ outcome: 'delivered', httpStatus: 204 }]));
      const { body: received } = await app.http.get('/webhook-receiver/leafy').expect(200);
      expect(received).toHaveLength(1);
      // Once at subscription, once for the delivery.
      expect(resolver.calls).toBe(2);
    });

    it('does not follow a redirect, whose target was never checked', async () => {
      const app = await start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
      other = createServer((req, res) => {
        res.writeHead(307, { location: `${app.baseUrl}/webhook-receiver/leafy` });
        res.end();
      });
      const redirector = other;
      await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/hook` }).expect(200);
      await placeOrder(app);
      await app.clock.advance(app.config.webhookWindowMs);

      const { body } = await app.http.get('/merchants/leafy/webhook/deliveries').set(auth).expect(200);
      expect(body).toMatchObject([{ outcome: 'failed', httpStatus: 307 }]);
      expect((body as WebhookDelivery[])[0]?.error).toContain('HTTP 307 (redirects are not followed)');
      await app.http.get('/webhook-receiver/leafy').expect(200, []);
    });

    it('gives up on a receiver that never answers after 5 s, and records why', async () => {
      const app = await start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' });
      // Reads the request and never answers.
      other = createServer(() => undefined);
      const silent = other;
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const auth = { authorization: `Bearer ${await merchantToken(app, 'leafy')}` };
      await app.http.put('/merchants/leafy/webhook').set(auth).send({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook` }).expect(200);
      await placeOrder(app);
      const startedAt = Date.now();
      await app.clock.advance(app.config.webhookWindowMs);

      const { body } = await app.http.get('/merchants/leafy/webhook/deliveries').set(auth).expect(200);
      expect(body).toMatchObject([{ outcome: 'failed', error: expect.stringContaining('no answer within 5000 ms') }]);
      // Bounded: 5 s of real time, with room for a busy machine.
      expect(Date.now() - startedAt).toBeLessThan(15_000);
      silent.closeAllConnections();
    }, 20_000);

    it('refuses a bad WEBHOOK_ALLOWED_NETWORKS at startup', async () => {
      await expect(start({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/33,localhost' })).rejects.toThrow(
        /WEBHOOK_ALLOWED_NETWORKS has "127\.0\.0\.1\/33"[^\n]*\n {2}- WEBHOOK_ALLOWED_NETWORKS has "localhost"/,
      );
    });
  });

  describe('errors are answered, not thrown: 400 with a reason instead of 500', () => {
    it("answers a library error with 400 and the error's code", async () => {
      const app = await start();
      const { body } = await app.http.get(`/api/admin/delays/${encodeURIComponent('bad topic')}`).set(ADMIN_API).expect(400);
      expect(body).toMatchObject({ statusCode: 400, error: 'Bad Request', code: 'ERR_DELAY_INVALID_TOPIC', message: expect.stringContaining('Invalid delay topic "bad topic"') });
    });

    it('refuses a JSON body nested deeper than 32 levels (45,000 "[") with 400, and one over 100 kB with 413', async () => {
      const app = await start();
      const deep = `${'['.repeat(45_000)}${']'.repeat(45_000)}`;
      const { body } = await app.http.post('/orders').set('content-type', 'application/json').send(deep).expect(400);
      expect(body).toMatchObject({ statusCode: 400, message: 'The JSON body nests arrays and objects more than 32 levels deep.' });
      // Brackets inside strings do not count: this body gets as far as validation, which names the sku.
      const { body: validated } = await app.http.post('/orders').send({ buyerId: 'ann', lines: [{ sku: `"\\${'['.repeat(40)}`, quantity: 1 }] }).expect(400);
      expect((validated as { message: string[] }).message).toEqual([expect.stringContaining('sku')]);
      const large = JSON.stringify({ buyerId: 'ann', lines: [{ sku: 'x'.repeat(110_000), quantity: 1 }] });
      await app.http.post('/orders').set('content-type', 'application/json').send(large).expect(413);
      await app.http.get('/orders').expect(200, []);
    });

    it('answers an unreachable store with 503 (DelayErrorFilter)', async () => {
      @Controller('probe')
      class ProbeController {
        @Get()
        probe(): never {
          throw new DriverUnavailableError('Redis did not answer within 1000 ms');
        }
      }
      @Module({ controllers: [ProbeController], providers: [{ provide: APP_FILTER, useClass: DelayErrorFilter }] })
      class ProbeModule {}
      const moduleRef = await Test.createTestingModule({ imports: [ProbeModule] }).compile();
      const probe: INestApplication = moduleRef.createNestApplication({ logger: false });
      await probe.init();
      try {
        await request(probe.getHttpServer()).get('/probe').expect(503, {
          statusCode: 503,
          error: 'Service Unavailable',
          message: 'Delay driver unavailable: Redis did not answer within 1000 ms',
          code: 'ERR_DELAY_DRIVER_UNAVAILABLE',
        });
      } finally {
        await probe.close();
      }
    });
  });

  describe('what the shop tells about itself', () => {
    it('sends no X-Powered-By', async () => {
      const app = await start();
      const response = await app.http.get('/products').expect(200);
      expect(response.headers['x-powered-by']).toBeUndefined();
    });

    it('names its service in the metrics: nestjs-delay-shop, or OTEL_SERVICE_NAME', async () => {
      const named = await start();
      expect((await named.http.get('/metrics').expect(200)).text).toMatch(/^target_info\{[^}]*service_name="nestjs-delay-shop"/m);
      await named.app.close();
      shop = undefined;
      const renamed = await start({ OTEL_SERVICE_NAME: 'checkout' });
      expect((await renamed.http.get('/metrics').expect(200)).text).toMatch(/^target_info\{[^}]*service_name="checkout"/m);
    });
  });
});

async function placeOrder(app: ShopTestApp): Promise<void> {
  await app.http
    .post('/orders')
    .send({ buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1 }] })
    .expect(201);
}
