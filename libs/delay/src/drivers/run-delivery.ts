import { DelayConsumer, Delivery, DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { describeError } from '../utils/describe-error';
import { inMicrotask } from '../utils/in-microtask';

/** How long a delivery waits when its consumer broke its promise never to fail. */
export const CONSUMER_FAILURE_RETRY_MS = 1_000;

/** The outcome of a delivery whose consumer failed (threw or rejected) instead of reporting one. */
export function consumerFailure(error: unknown): DeliveryOutcome {
  return { kind: 'retry', delayMs: CONSUMER_FAILURE_RETRY_MS, error: describeError(error) };
}

/**
 * Hands a delivery to the consumer and calls `report` once with its outcome,
 * never before this returns. A consumer must not fail; if one does anyway (a
 * custom consumer, a bug), the action is retried rather than left holding a
 * handler slot forever or crashing the process. A consumer with `consume`
 * is called through it (no promise per delivery), any other through `handle`.
 */
export function runDelivery(consumer: DelayConsumer, delivery: Delivery, report: (outcome: DeliveryOutcome) => void): void {
  if (consumer.consume) {
    try {
      consumer.consume(delivery, report);
    } catch (error) {
      inMicrotask(() => report(consumerFailure(error)));
    }
    return;
  }
  let handled: Promise<DeliveryOutcome>;
  try {
    handled = Promise.resolve(consumer.handle(delivery));
  } catch (error) {
    handled = Promise.reject(error);
  }
  handled.then(report, (error: unknown) => report(consumerFailure(error)));
}
