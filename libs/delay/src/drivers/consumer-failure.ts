import { DeliveryOutcome } from '../interfaces/delay-driver.interface';
import { describeError } from '../utils/describe-error';

/** How long a delivery waits when its consumer broke its promise never to fail. */
export const CONSUMER_FAILURE_RETRY_MS = 1_000;

/** The outcome of a delivery whose consumer failed (threw, rejected, or reported no outcome) instead of reporting one. */
export function consumerFailure(error: unknown): DeliveryOutcome {
  return { kind: 'retry', delayMs: CONSUMER_FAILURE_RETRY_MS, error: describeError(error) };
}

/** True for the three shapes a DeliveryOutcome can have; a custom consumer may hand back anything. */
export function isDeliveryOutcome(value: unknown): value is DeliveryOutcome {
  if (typeof value !== 'object' || value === null) return false;
  const { kind } = value as { kind?: unknown };
  return kind === 'completed' || kind === 'retry' || kind === 'dead';
}
