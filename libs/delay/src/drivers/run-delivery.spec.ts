import { DelayConsumer, Delivery, DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { CONSUMER_FAILURE_RETRY_MS, runDelivery } from './run-delivery';

const delivery: Delivery = { topic: 'order.unpaid', key: 'o-1', payload: undefined, dueAt: 0, firedAt: 0, attempt: 1, token: '1' };
const COMPLETED: DeliveryOutcome = { kind: 'completed' };

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

const topics = new Map([['order.unpaid', 1]]);

describe('runDelivery', () => {
  it('goes through consume when the consumer has it, and handle is not called', async () => {
    let handled = 0;
    const consumer: DelayConsumer = {
      topics,
      handle: async () => {
        handled++;
        return COMPLETED;
      },
      consume: (_, report) => queueMicrotask(() => report({ kind: 'dead', error: 'from consume' })),
    };
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [{ kind: 'dead', error: 'from consume' }], synchronous: false });
    expect(handled).toBe(0);
  });

  it('goes through handle when there is no consume', async () => {
    const consumer: DelayConsumer = { topics, handle: async () => COMPLETED };
    await expect(deliver(consumer)).resolves.toEqual({ outcomes: [COMPLETED], synchronous: false });
  });

  it.each([
    ['consume throws', { topics, handle: async () => COMPLETED, consume: () => { throw new Error('broken consumer'); } }],
    ['handle rejects', { topics, handle: () => Promise.reject(new Error('broken consumer')) }],
    ['handle throws before returning a promise', { topics, handle: () => { throw new Error('broken consumer'); } }],
  ] as Array<[string, DelayConsumer]>)('retries the action, once and later, when %s', async (_, consumer) => {
    await expect(deliver(consumer)).resolves.toEqual({
      outcomes: [{ kind: 'retry', delayMs: CONSUMER_FAILURE_RETRY_MS, error: 'broken consumer' }],
      synchronous: false,
    });
  });
});
