import { DelayConsumer, Delivery, DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { describeError } from '../utils/describe-error';

/** How long a delivery waits when its consumer broke its promise never to reject. */
const CONSUMER_FAILURE_RETRY_MS = 1_000;

/**
 * Hands a delivery to the consumer. A consumer must not reject; if one does
 * anyway (a custom consumer, a bug), the action is retried rather than left
 * holding a handler slot forever or crashing the process.
 */
export function runDelivery(consumer: DelayConsumer, delivery: Delivery): Promise<DeliveryOutcome> {
  return consumer
    .handle(delivery)
    .catch((error: unknown): DeliveryOutcome => ({ kind: 'retry', delayMs: CONSUMER_FAILURE_RETRY_MS, error: describeError(error) }));
}
