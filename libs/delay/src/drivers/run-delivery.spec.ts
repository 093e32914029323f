import { DelayConsumer, Delivery, DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { CONSUMER_FAILURE_RETRY_MS } from './consumer-failure';
import { runDelivery } from './run-delivery';

const delivery: Delivery = { topic: 'order.unpaid', key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt: 1, token: '1' };
const COMPLETED: DeliveryOutcome = { kind: 'completed' };
const topics = new Map([['order.unpaid', 1]]);
const handle = async (): Promise<DeliveryOutcome> => COMPLETED;

/** Runs one delivery; resolves with every outcome reported by the next macrotask, and whether one came before runDelivery returned. */
async function deliver(consumer: DelayConsumer): Promise<{ outcomes: DeliveryOutcome[]; synchronous: boolean }> {
  const outcomes: DeliveryOutcome[] = [];
  let returned = false;
  let synchronous = false;
  runDelivery(consumer, delivery, (outcome) => {
    if (!returned) synchronous = true;
    outcomes.push(outcome);
  });
  returned = true;
  await new Promise((resolve) => setImmediate(resolve));
  return { outcomes, synchronous };
}

const retry = (error: string): DeliveryOutcome => ({ kind: 'retry', delayMs: CONSUMER_FAILURE_RETRY_MS, error });

describe('runDelivery', () => {
  it('goes through consume when the consumer has it, and handle is not called', async () => {
    let handled = 0;
    const consumer: DelayConsumer = {
      topics,
      handle: async () => {
        handled++;
        return COMPLETED;
      },
      consume: (_, report) => void Promise.resolve().then(() => report({ kind: 'dead', error: 'from consume' })),
    };
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [{ kind: 'dead', error: 'from consume' }], synchronous: false });
    expect(handled).toBe(0);
  });

  it('goes through handle when there is no consume', async () => {
    await expect(deliver({ topics, handle })).resolves.toEqual({ outcomes: [COMPLETED], synchronous: false });
  });

  it.each<[string, DelayConsumer]>([
    [
      'consume throws',
      {
        topics,
        handle,
        consume: () => {
          throw new Error('broken consumer');
        },
      },
    ],
    ['handle rejects', { topics, handle: () => Promise.reject(new Error('broken consumer')) }],
    [
      'handle throws before returning a promise',
      {
        topics,
        handle: () => {
          throw new Error('broken consumer');
        },
      },
    ],
  ])('retries the action, once and later, when %s', async (_, consumer) => {
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [retry('broken consumer')], synchronous: false });
  });

  it('delays a report made inside consume until consume has returned (the driver is still in its dispatch loop)', async () => {
    const consumer: DelayConsumer = { topics, handle, consume: (_, report) => report(COMPLETED) };
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [COMPLETED], synchronous: false });
  });

  it('passes on only the first report of a consumer that reports twice, or reports and then throws', async () => {
    const twice: DelayConsumer = {
      topics,
      handle,
      consume: (_, report) => {
        report(COMPLETED);
        void Promise.resolve().then(() => report({ kind: 'dead', error: 'second' }));
      },
    };
    const thenThrows: DelayConsumer = {
      topics,
      handle,
      consume: (_, report) => {
        report(COMPLETED);
        throw new Error('after reporting');
      },
    };
    await expect(deliver(twice)).resolves.toEqual({ outcomes: [COMPLETED], synchronous: false });
    await expect(deliver(thenThrows)).resolves.toEqual({ outcomes: [COMPLETED], synchronous: false });
  });

  it('retries the action when the consumer hands back something that is not an outcome', async () => {
    const consumer = { topics, handle: async () => undefined } as unknown as DelayConsumer;
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [retry('the consumer reported undefined, not an outcome')], synchronous: false });
  });
});
