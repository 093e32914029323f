import { DelayDispatcher } from './delay.dispatcher';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { Delivery } from './interfaces/delay-driver.interface';
import { VirtualClock } from './time/virtual-clock';

describe('DelayDispatcher', () => {
  const clock = new VirtualClock();
  let calls: number;
  let dispatcher: DelayDispatcher;

  beforeEach(() => {
    calls = 0;
    const registry = new DelayHandlerRegistry();
    registry.register({
      topic: 'order.unpaid',
      name: 'Handlers.onUnpaid',
      options: { attempts: 2, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs: undefined },
      invoke: () => {
        calls++;
      },
    });
    dispatcher = new DelayDispatcher(registry, new DelayEventBus(clock), clock);
  });

  const delivery = (attempt: number): Delivery => ({ topic: 'order.unpaid', key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt, token: '1' });

  it('runs the handler for attempts within the limit', async () => {
    await expect(dispatcher.handle(delivery(2))).resolves.toEqual({ kind: 'completed' });
    expect(calls).toBe(1);
  });

  it('dead-letters, without running it again, an action whose earlier runs all died with their process', async () => {
    // Attempt 3 of 2 can only come from lease expiries: each run crashed before reporting back.
    const outcome = await dispatcher.handle(delivery(3));
    expect(outcome).toMatchObject({ kind: 'dead' });
    expect(outcome.kind === 'dead' ? outcome.error : '').toContain('never finished');
    expect(calls).toBe(0);
  });
});

describe('DelayDispatcher with a handler that throws something JSON cannot describe', () => {
  it('retries it and never rejects', async () => {
    const clock = new VirtualClock();
    const registry = new DelayHandlerRegistry();
    const cyclic: Record<string, unknown> = { big: 1n };
    cyclic.self = cyclic;
    registry.register({
      topic: 'order.unpaid',
      name: 'Handlers.onUnpaid',
      options: { attempts: 3, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs: undefined },
      invoke: () => {
        throw cyclic;
      },
    });
    const dispatcher = new DelayDispatcher(registry, new DelayEventBus(clock), clock);
    const outcome = await dispatcher.handle({ topic: 'order.unpaid', key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt: 1, token: '1' });
    expect(outcome).toEqual({ kind: 'retry', delayMs: 1_000, error: '[object Object]' });
  });
});
