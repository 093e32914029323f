import { Logger } from '@nestjs/common';
import { DelayDispatcher } from './delay.dispatcher';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { Delivery, DeliveryOutcome } from './interfaces/delay-driver.interface';
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
      options: { attempts: 2, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs: undefined, transactional: false },
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
      options: { attempts: 3, backoff: { type: 'fixed', delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs: undefined, transactional: false },
      invoke: () => {
        throw cyclic;
      },
    });
    const dispatcher = new DelayDispatcher(registry, new DelayEventBus(clock), clock);
    const outcome = await dispatcher.handle({ topic: 'order.unpaid', key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt: 1, token: '1' });
    expect(outcome).toEqual({ kind: 'retry', delayMs: 1_000, error: '[object Object]' });
  });
});

describe('DelayDispatcher.consume (the form drivers call)', () => {
  const clock = new VirtualClock();
  const options = (timeoutMs: number | undefined) => ({ attempts: 2, backoff: { type: 'fixed' as const, delayMs: 1_000, maxDelayMs: 1_000 }, concurrency: 1, timeoutMs, transactional: false });
  const delivery = (topic: string, attempt = 1): Delivery => ({ topic, key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt, token: '1' });
  const later = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

  function dispatcherWith(invoke: () => unknown, timeoutMs?: number): DelayDispatcher {
    const registry = new DelayHandlerRegistry();
    registry.register({ topic: 'order.unpaid', name: 'Handlers.onUnpaid', options: options(timeoutMs), invoke });
    return new DelayDispatcher(registry, new DelayEventBus(clock), clock);
  }

  /** Consumes one delivery; the outcomes reported so far, and whether any came before consume returned. */
  function consume(dispatcher: DelayDispatcher, what: Delivery): { outcomes: DeliveryOutcome[]; synchronous: () => boolean } {
    const outcomes: DeliveryOutcome[] = [];
    let returned = false;
    let synchronous = false;
    dispatcher.consume(what, (outcome) => {
      if (!returned) synchronous = true;
      outcomes.push(outcome);
    });
    returned = true;
    return { outcomes, synchronous: () => synchronous };
  }

  it.each([
    ['an async handler', () => Promise.resolve(), { kind: 'completed' }],
    ['a synchronous handler', () => undefined, { kind: 'completed' }],
    ['a handler that throws', () => { throw new Error('boom'); }, { kind: 'retry', delayMs: 1_000, error: 'boom' }],
    ['a handler that rejects', () => Promise.reject(new Error('boom')), { kind: 'retry', delayMs: 1_000, error: 'boom' }],
    ['a thenable whose then throws', () => ({ then: () => { throw new Error('bad then'); } }), { kind: 'retry', delayMs: 1_000, error: 'bad then' }],
    ['a thenable whose then calls back at once', () => ({ then: (resolve: () => void) => resolve() }), { kind: 'completed' }],
    ['a thenable that rejects at once', () => ({ then: (_: unknown, reject: (error: Error) => void) => reject(new Error('no')) }), { kind: 'retry', delayMs: 1_000, error: 'no' }],
  ])('reports once, and only after consume returned, for %s', async (_, invoke, expected) => {
    const dispatcher = dispatcherWith(invoke);
    const { outcomes, synchronous } = consume(dispatcher, delivery('order.unpaid'));
    expect(outcomes).toEqual([]);
    await later();
    expect(outcomes).toEqual([expected]);
    expect(synchronous()).toBe(false);
    expect(dispatcher.running).toBe(0);
  });

  it('does not adopt what a thenable resolves with: one that resolves with itself completes, and timers still run', async () => {
    // Adopting it would call its `then` again for ever, in the microtask queue; bounded here so a regression fails, not hangs.
    let thens = 0;
    const selfResolving = {
      then(resolve: (value: unknown) => void): void {
        thens++;
        resolve(thens < 1_000 ? selfResolving : undefined);
      },
    };
    const dispatcher = dispatcherWith(() => selfResolving);
    const { outcomes } = consume(dispatcher, delivery('order.unpaid'));
    await later();
    expect(outcomes).toEqual([{ kind: 'completed' }]);
    expect(thens).toBe(1);
  });

  it('reports after consume returned when there is no handler, or the attempts are used up', async () => {
    const dispatcher = dispatcherWith(() => undefined);
    const none = consume(dispatcher, delivery('order.other'));
    const spent = consume(dispatcher, delivery('order.unpaid', 3));
    expect([...none.outcomes, ...spent.outcomes]).toEqual([]);
    await later();
    expect(none.outcomes).toEqual([{ kind: 'retry', delayMs: 60_000, error: 'no handler' }]);
    expect(spent.outcomes).toMatchObject([{ kind: 'dead' }]);
  });

  it('reports a timed-out run once, at its timeout, and not again when the handler finishes later', async () => {
    let finishHandler: () => void = () => undefined;
    const dispatcher = dispatcherWith(() => new Promise<void>((resolve) => (finishHandler = resolve)), 50);
    const { outcomes } = consume(dispatcher, delivery('order.unpaid'));
    await later(20);
    expect(outcomes).toEqual([]);
    await later(200);
    expect(outcomes).toEqual([{ kind: 'retry', delayMs: 1_000, error: 'timed out after 50 ms' }]);
    finishHandler();
    await later();
    expect(outcomes).toHaveLength(1);
  });

  it('logs a driver callback that throws, and keeps it from the handler promise and the timer', async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const dispatcher = dispatcherWith(() => Promise.resolve());
      dispatcher.consume(delivery('order.unpaid'), () => {
        throw new Error('driver bug');
      });
      await later(10);
      expect(logged).toHaveBeenCalledWith(expect.stringContaining('driver bug'));
      expect(dispatcher.running).toBe(0);
    } finally {
      logged.mockRestore();
    }
  });

  it('reports a run aborted at shutdown once, and stays silent when its handler finishes later', async () => {
    let finishHandler: () => void = () => undefined;
    const dispatcher = dispatcherWith(() => new Promise<void>((resolve) => (finishHandler = resolve)));
    const { outcomes } = consume(dispatcher, delivery('order.unpaid'));
    await later();
    dispatcher.abortRunning('shutting down');
    expect(outcomes).toEqual([{ kind: 'retry', delayMs: 0, error: 'shutting down' }]);
    finishHandler();
    await later();
    expect(outcomes).toHaveLength(1);
    expect(dispatcher.running).toBe(0);
  });

  it('retries the action when deciding its outcome throws', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => {
      throw new Error('logger down');
    });
    try {
      const dispatcher = dispatcherWith(() => Promise.reject(new Error('boom')));
      const { outcomes } = consume(dispatcher, delivery('order.unpaid'));
      await later();
      expect(outcomes).toEqual([{ kind: 'retry', delayMs: 1_000, error: 'logger down' }]);
    } finally {
      warn.mockRestore();
    }
  });
});
