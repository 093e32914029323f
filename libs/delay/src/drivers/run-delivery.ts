import { DelayConsumer, Delivery, DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { inMicrotask } from '../utils/in-microtask';
import { consumerFailure, isDeliveryOutcome } from './consumer-failure';

/**
 * Hands a delivery to the consumer and calls `report` (the driver's own
 * callback, which must not throw) exactly once with its outcome, never
 * before this returns: as a promise would, whatever the consumer does. A
 * consumer must not fail; if one does anyway (a custom consumer, a bug:
 * it throws, rejects, reports something that is no outcome, or reports
 * twice), the action is retried, or the extra report dropped, rather than
 * a handler slot being held forever or freed twice. A consumer with
 * `consume` is called through it (no promise per delivery), any other
 * through `handle`.
 */
export function runDelivery(consumer: DelayConsumer, delivery: Delivery, report: (outcome: DeliveryOutcome) => void): void {
  let returned = false;
  let reported = false;
  const once = (outcome: unknown): void => {
    if (reported) return;
    // A report made before the consumer returned would re-enter the driver's dispatch loop: later, then.
    if (!returned) return inMicrotask(() => once(outcome));
    reported = true;
    report(isDeliveryOutcome(outcome) ? outcome : consumerFailure(new Error(`the consumer reported ${String(outcome)}, not an outcome`)));
  };
  if (consumer.consume) {
    try {
      consumer.consume(delivery, once);
    } catch (error) {
      inMicrotask(() => once(consumerFailure(error)));
    }
    returned = true;
    return;
  }
  returned = true;
  let handled: Promise<DeliveryOutcome>;
  try {
    handled = Promise.resolve(consumer.handle(delivery));
  } catch (error) {
    handled = Promise.reject(error);
  }
  handled.then(once, (error: unknown) => once(consumerFailure(error)));
}
