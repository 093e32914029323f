import { Injectable, Logger } from '@nestjs/common';
import { backoffDelay } from './delay.module-definition';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { DelayContext } from './interfaces/delay-context.interface';
import { DelayConsumer, Delivery, DeliveryOutcome } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';
import { describeError } from './utils/describe-error';
import { parsePayload } from './validation/action-input';

/** Shared: an outcome is only read. */
const COMPLETED: DeliveryOutcome = { kind: 'completed' };

/** What a handler receives; `items` is present only for a batch. */
function toContext(delivery: Delivery): DelayContext {
  const payload = parsePayload(delivery.payload);
  const dueAt = new Date(delivery.dueAt);
  const firedAt = new Date(delivery.firedAt);
  const { topic, key, attempt, items } = delivery;
  if (items === undefined) return { topic, key, payload, dueAt, firedAt, attempt };
  return { topic, key, payload, items: items.map((item) => JSON.parse(item) as unknown), dueAt, firedAt, attempt };
}

/** How long an action waits when it reaches an instance that has no handler for it. */
const NO_HANDLER_RETRY_MS = 60_000;

/**
 * Runs one delivery through its topic's handler and decides what happens
 * next: completed, retried after the backoff, or dead. Drivers call it and
 * apply the outcome; it never throws.
 */
@Injectable()
export class DelayDispatcher implements DelayConsumer {
  private readonly logger = new Logger(DelayDispatcher.name);

  constructor(
    private readonly registry: DelayHandlerRegistry,
    private readonly events: DelayEventBus,
    private readonly clock: DelayClock,
  ) {}

  get topics(): ReadonlyMap<string, number> {
    return this.registry.concurrencyByTopic();
  }

  async handle(delivery: Delivery): Promise<DeliveryOutcome> {
    const { topic, key, attempt } = delivery;
    const handler = this.registry.get(topic);
    if (!handler) {
      this.logger.error(`No handler for topic "${topic}" in this process; action "${key}" is put back for ${NO_HANDLER_RETRY_MS} ms`);
      return { kind: 'retry', delayMs: NO_HANDLER_RETRY_MS, error: 'no handler' };
    }
    const size = delivery.items?.length;
    if (attempt > handler.options.attempts) {
      // Only a run that never reported back gets here (its process died, or its lease ran out):
      // giving up now keeps a handler that crashes its process from being redelivered forever.
      const error = `gave up after ${attempt - 1} attempt(s) that never finished (the process running them stopped)`;
      this.logger.error(`${handler.name} on "${key}": ${error}; moved to the dead set`);
      this.events.emit(() => ({ type: 'dead', topic, key, attempt, size, error }));
      return { kind: 'dead', error };
    }
    // The hot path: no event is built, and no closure made for one, unless someone listens.
    const { events } = this;
    if (events.listening) events.publish({ type: 'fired', topic, key, at: events.now(), attempt, size, dueAt: new Date(delivery.dueAt) });
    try {
      await handler.invoke(toContext(delivery));
      if (events.listening) events.publish({ type: 'completed', topic, key, at: events.now(), attempt, size });
      return COMPLETED;
    } catch (thrown) {
      const error = describeError(thrown);
      this.events.emit(() => ({ type: 'failed', topic, key, attempt, size, error }));
      if (attempt < handler.options.attempts) {
        const delayMs = backoffDelay(handler.options.backoff, attempt);
        this.logger.warn(`${handler.name} failed on "${key}" (attempt ${attempt}/${handler.options.attempts}), retrying in ${delayMs} ms: ${error}`);
        this.events.emit(() => ({ type: 'retrying', topic, key, attempt, size, error, retryAt: new Date(this.clock.now() + delayMs) }));
        return { kind: 'retry', delayMs, error };
      }
      this.logger.error(`${handler.name} failed on "${key}" after ${attempt} attempt(s); moved to the dead set: ${error}`);
      this.events.emit(() => ({ type: 'dead', topic, key, attempt, size, error }));
      return { kind: 'dead', error };
    }
  }
}
