import { Test } from '@nestjs/testing';
import { AppModule } from '../../apps/shop/src/app.module';
import { SHOP_ENV_DEFAULTS } from '../../apps/shop/src/config/parse-shop-env';
import { ShopTestApp, startShop, withEnv } from './shop-test-app';

describe('Configuration (e2e): timeouts from the environment, checked at startup', () => {
  let shop: ShopTestApp | undefined;

  afterEach(async () => {
    await shop?.app.close();
    shop = undefined;
  });

  it('refuses to start on bad variables, naming each one', async () => {
    const compile = withEnv({ ...SHOP_ENV_DEFAULTS, UNPAID_TIMEOUT: 'soon', PORT: '99999', DATABASE_URL: 'mysql://localhost/shop', DELAY_DRIVER: 'cron', REDIS_URL: 'localhost:6379', REDIS_PREFIX: 'my shop' }, () =>
      Test.createTestingModule({ imports: [AppModule] }).compile(),
    );
    await expect(compile).rejects.toThrow(
      [
        'Invalid environment, the shop cannot start:',
        '  - PORT="99999" must be a whole number from 0 to 65535 (default 3000)',
        '  - DATABASE_URL must be a postgres:// or postgresql:// URL, e.g. postgres://shop:secret@localhost:5432/shop (unset it to use the embedded PostgreSQL)',
        '  - DELAY_DRIVER="cron" must be one of postgres, redis, wheel (unset it for postgres, or redis when REDIS_URL is set)',
        '  - REDIS_URL="localhost:6379" must be a redis:// or rediss:// URL, e.g. redis://localhost:6379 (unset it to keep pending actions in the shop\'s database)',
        '  - REDIS_PREFIX="my shop" must be 1 to 64 letters, digits, ".", "_", ":" or "-", e.g. shop (unset it for the default, delay)',
        '  - UNPAID_TIMEOUT="soon" is not a duration; use e.g. "500ms", "10s", "30m", "48h" or "1h30m" (default 30m)',
      ].join('\n'),
    );
  });

  it('uses the timeouts it is given, for a demo that runs in seconds', async () => {
    shop = await startShop({ env: { UNPAID_TIMEOUT: '10s', OFFLINE_AFTER: '5s' } });
    const { body: order } = await shop.http
      .post('/orders')
      .send({ buyerId: 'ann', lines: [{ sku: 'green-tea', quantity: 1 }] })
      .expect(201);
    await shop.http.post('/presence/ann/heartbeat').expect(200);

    await shop.clock.advance('10s');
    await shop.http.get(`/orders/${(order as { id: string }).id}`).expect(200).expect(({ body }) => expect(body).toMatchObject({ status: 'cancelled' }));
    await shop.http.get('/presence/ann').expect(200).expect(({ body }) => expect(body).toMatchObject({ online: false }));
  });
});
