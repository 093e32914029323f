import { HandlerRun } from './handler-run';
import { DelayContext } from './interfaces/delay-context.interface';
import { Delivery } from './interfaces/delay-driver.interface';
import { parsePayload } from './validation/payload-json';
import { parseOccurrenceKey } from './recurring/occurrence-key';
import { RecurringOccurrence } from './recurring/recurring-options';

/**
 * The DelayContext a handler receives. A class, so every context has one
 * shape (a literal with spreads and an accessor falls off V8's fast path,
 * which cost a burst most of its rate), and `signal` a getter, so the
 * AbortController behind it is made only for handlers that read it.
 */
export class HandlerContext implements DelayContext {
  readonly topic: string;
  readonly key: string;
  readonly payload: unknown;
  readonly items: unknown[] | undefined;
  readonly dueAt: Date;
  readonly firedAt: Date;
  readonly attempt: number;
  readonly trace: string | undefined;
  readonly occurrence: RecurringOccurrence | undefined;
  /** Set by the transactional run before the handler is called. */
  transaction: unknown;
  readonly #run: HandlerRun;

  constructor(delivery: Delivery, run: HandlerRun) {
    this.topic = delivery.topic;
    this.key = delivery.key;
    this.payload = parsePayload(delivery.payload);
    this.items = delivery.items ? delivery.items.map((item) => JSON.parse(item) as unknown) : undefined;
    this.dueAt = new Date(delivery.dueAt);
    this.firedAt = new Date(delivery.firedAt);
    this.attempt = delivery.attempt;
    this.trace = delivery.trace;
    this.occurrence = undefined;
    this.transaction = undefined;
    if (run.handler.recurring) {
      const parsed = parseOccurrenceKey(delivery.key);
      if (parsed) {
        // A recurring handler sees its schedule's key; the occurrence's own key is in `occurrence`.
        this.key = parsed.seriesKey;
        this.occurrence = { key: delivery.key, scheduledAt: new Date(parsed.scheduledAtMs), lateMs: Math.max(0, delivery.firedAt - parsed.scheduledAtMs), runNow: parsed.runNow };
      }
    }
    this.#run = run;
  }

  get signal(): AbortSignal {
    return this.#run.signal;
  }
}
