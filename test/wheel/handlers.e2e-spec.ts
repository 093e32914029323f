import { Controller, Injectable, Module } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

/** Where every handler in this file reports what it received. */
@Injectable()
class Inbox {
  readonly received: DelayContext[] = [];
}

@Injectable()
class OrderTimeouts {
  constructor(private readonly inbox: Inbox) {}

  @OnDelayExpired('order.unpaid')
  async cancelUnpaid(context: DelayContext<{ total: number }>): Promise<void> {
    this.inbox.received.push(context);
  }
}

/** Not decorated with @Injectable: built by a factory. */
class FactoryBuiltHandler {
  constructor(private readonly inbox: Inbox) {}

  @OnDelayExpired('from.factory')
  handle(context: DelayContext): void {
    this.inbox.received.push(context);
  }
}

class ValueHandler {
  readonly received: DelayContext[] = [];

  @OnDelayExpired('from.value')
  handle(context: DelayContext): void {
    this.received.push(context);
  }
}

@Controller('webhooks')
class WebhookController {
  constructor(private readonly inbox: Inbox) {}

  @OnDelayExpired('from.controller')
  handle(context: DelayContext): void {
    this.inbox.received.push(context);
  }
}

@Injectable()
class NestedHandler {
  constructor(private readonly inbox: Inbox) {}

  @OnDelayExpired('from.nested')
  handle(context: DelayContext): void {
    this.inbox.received.push(context);
  }
}

@Module({ providers: [Inbox], exports: [Inbox] })
class InboxModule {}

@Module({ imports: [InboxModule], providers: [NestedHandler] })
class NestedFeatureModule {}

describe('@OnDelayExpired handlers (wheel driver)', () => {
  const apps = useApps();
  let clock: VirtualClock;

  beforeEach(() => {
    clock = new VirtualClock();
  });

  it('calls the handler with topic, key, payload, dueAt, firedAt and attempt', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock }), InboxModule], providers: [OrderTimeouts] });
    const delay = app.get(DelayService);
    const inbox = app.get(Inbox);
    const start = clock.now();

    await delay.schedule('order.unpaid', 'order-42', { delay: '30m', payload: { total: 1999 } });
    await clock.advance('29m');
    expect(inbox.received).toHaveLength(0);
    await clock.advance('1m');

    expect(inbox.received).toEqual([
      {
        topic: 'order.unpaid',
        key: 'order-42',
        payload: { total: 1999 },
        dueAt: new Date(start + 1_800_000),
        firedAt: new Date(start + 1_800_000),
        attempt: 1,
        signal: expect.any(AbortSignal),
      },
    ]);
    // It ran once and the action is gone.
    await clock.advance('1d');
    expect(inbox.received).toHaveLength(1);
    expect(await delay.get('order.unpaid', 'order-42')).toBeNull();
  });

  it('discovers handlers on useFactory and useValue providers, on controllers and in imported modules', async () => {
    const valueHandler = new ValueHandler();
    const app = await apps.boot({
      imports: [DelayModule.forRoot({ clock }), InboxModule, NestedFeatureModule],
      controllers: [WebhookController],
      providers: [
        { provide: 'FACTORY_HANDLER', inject: [Inbox], useFactory: (inbox: Inbox) => new FactoryBuiltHandler(inbox) },
        { provide: 'VALUE_HANDLER', useValue: valueHandler },
      ],
    });
    const delay = app.get(DelayService);
    for (const topic of ['from.factory', 'from.value', 'from.controller', 'from.nested']) {
      await delay.schedule(topic, 'k', { delay: '1s', payload: topic });
    }
    await clock.advance('1s');

    const inbox = app.get(Inbox);
    expect(inbox.received.map((context) => context.topic).sort()).toEqual(['from.controller', 'from.factory', 'from.nested']);
    expect(valueHandler.received).toEqual([expect.objectContaining({ topic: 'from.value', key: 'k', payload: 'from.value' })]);
    for (const topic of ['from.factory', 'from.value', 'from.controller', 'from.nested']) expect(await delay.count(topic)).toBe(0);
  });

  it('registers a provider once when it is also reachable through a useExisting alias', async () => {
    const app = await apps.boot({
      imports: [DelayModule.forRoot({ clock }), InboxModule],
      providers: [OrderTimeouts, { provide: 'ORDER_TIMEOUTS_ALIAS', useExisting: OrderTimeouts }],
    });
    await app.get(DelayService).schedule('order.unpaid', 'o-1', { delay: '1s' });
    await clock.advance('1s');
    expect(app.get(Inbox).received.map((context) => context.key)).toEqual(['o-1']);
  });

  it('passes no payload through as undefined, and null as null', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock }), InboxModule], providers: [OrderTimeouts] });
    const delay = app.get(DelayService);
    await delay.schedule('order.unpaid', 'none', { delay: '1s' });
    await delay.schedule('order.unpaid', 'null', { delay: '2s', payload: null });
    await clock.advance('2s');
    const received = app.get(Inbox).received;
    expect(received.map((context) => [context.key, context.payload])).toEqual([
      ['none', undefined],
      ['null', null],
    ]);
  });

  it('lets a handler schedule the next step, which then fires on its own time', async () => {
    @Injectable()
    class Delivery {
      readonly rated: string[] = [];

      constructor(private readonly delay: DelayService) {}

      @OnDelayExpired('order.delivered')
      async delivered({ key }: DelayContext): Promise<void> {
        await this.delay.schedule('order.auto-rate', key, { delay: '48h', payload: { stars: 5 } });
      }

      @OnDelayExpired('order.auto-rate')
      autoRate({ key, payload }: DelayContext<{ stars: number }>): void {
        this.rated.push(`${key}:${payload?.stars}`);
      }
    }
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [Delivery] });
    await app.get(DelayService).schedule('order.delivered', 'o-7', { delay: '1h' });
    await clock.advance('1h');
    expect(await app.get(DelayService).get('order.auto-rate', 'o-7')).toMatchObject({ payload: { stars: 5 } });
    await clock.advance('47h59m');
    expect(app.get(Delivery).rated).toEqual([]);
    await clock.advance('1m');
    expect(app.get(Delivery).rated).toEqual(['o-7:5']);
  });
});
