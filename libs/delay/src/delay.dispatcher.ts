import { Injectable, Logger } from '@nestjs/common';
import { backoffDelay } from './delay.module-definition';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry, RegisteredHandler } from './delay-handler.registry';
import { HandlerAbortedError } from './errors/handler-aborted.error';
import { DelayConsumer, Delivery, DeliveryOutcome } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';
import { describeError } from './utils/describe-error';
import { parsePayload } from './validation/action-input';

/** How long an action waits when it reaches an instance that has no handler for it. */
const NO_HANDLER_RETRY_MS = 60_000;

/** How a run ended, before it is turned into an outcome. */
type RunResult = { readonly ok: true } | { readonly ok: false; readonly error: string; readonly timedOut: boolean };

const COMPLETED: RunResult = { ok: true };

/** A run whose handler has not settled yet: shutdown can abort it. */
interface LiveRun {
  readonly controller: AbortController;
  /** Ends the run's wait now with this result (the handler itself goes on until it notices the signal). */
  readonly stop: (result: RunResult) => void;
}

/**
 * Runs one delivery through its topic's handler and decides what happens
 * next: completed, retried after the backoff, or dead. Drivers call it and
 * apply the outcome; it never throws.
 *
 * A run that outlives its topic's timeout is given up: its outcome is a
 * failure at once, so the driver frees its slot (and, on Redis, stops
 * renewing its lease), and its AbortSignal fires so the handler can stop.
 * The timeout runs on real time, not on the DelayClock: under a VirtualClock
 * time stands still while handlers run, so a virtual deadline would never
 * come and `advance()` would wait for a hung handler forever.
 */
@Injectable()
export class DelayDispatcher implements DelayConsumer {
  private readonly logger = new Logger(DelayDispatcher.name);
  private readonly live = new Set<LiveRun>();

  constructor(
    private readonly registry: DelayHandlerRegistry,
    private readonly events: DelayEventBus,
    private readonly clock: DelayClock,
  ) {}

  get topics(): ReadonlyMap<string, number> {
    return this.registry.concurrencyByTopic();
  }

  /** Handlers running now in this process (timed-out ones no longer count). */
  get running(): number {
    return this.live.size;
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
    this.events.emit(() => ({ type: 'fired', topic, key, attempt, size, dueAt: new Date(delivery.dueAt) }));
    const result = await this.run(handler, delivery);
    if (result.ok) {
      this.events.emit(() => ({ type: 'completed', topic, key, attempt, size }));
      return { kind: 'completed' };
    }
    const { error } = result;
    if (result.timedOut) this.events.emit(() => ({ type: 'timedOut', topic, key, attempt, size, error }));
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

  /**
   * Aborts every handler still running (shutdown calls it once its wait is
   * over): their signals fire and their runs end as failed now, so no
   * driver promise is left waiting on a handler that never settles.
   */
  abortRunning(message: string): void {
    for (const run of [...this.live]) {
      run.controller.abort(new HandlerAbortedError('shutdown', message));
      run.stop({ ok: false, error: message, timedOut: false });
    }
  }

  /** Calls the handler and waits for it, at most its timeout. */
  private run(handler: RegisteredHandler, delivery: Delivery): Promise<RunResult> {
    const controller = new AbortController();
    const invoked = this.invoke(handler, delivery, controller.signal);
    const { timeoutMs } = handler.options;
    return new Promise<RunResult>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const run: LiveRun = {
        controller,
        stop: (result) => {
          if (!this.live.delete(run)) return;
          if (timer !== undefined) clearTimeout(timer);
          resolve(result);
        },
      };
      this.live.add(run);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const error = `timed out after ${timeoutMs} ms`;
          controller.abort(new HandlerAbortedError('timeout', `${handler.name} on "${delivery.key}" ${error}`));
          run.stop({ ok: false, error, timedOut: true });
          this.reportLateFinish(handler, delivery, invoked);
        }, timeoutMs);
      }
      invoked.then(run.stop);
    });
  }

  /** The handler's own result; never rejects. */
  private async invoke(handler: RegisteredHandler, delivery: Delivery, signal: AbortSignal): Promise<RunResult> {
    try {
      await handler.invoke({
        topic: delivery.topic,
        key: delivery.key,
        payload: parsePayload(delivery.payload),
        ...(delivery.items ? { items: delivery.items.map((item) => JSON.parse(item) as unknown) } : {}),
        dueAt: new Date(delivery.dueAt),
        firedAt: new Date(delivery.firedAt),
        attempt: delivery.attempt,
        signal,
        ...(delivery.trace !== undefined ? { trace: delivery.trace } : {}),
      });
      return COMPLETED;
    } catch (thrown) {
      return { ok: false, error: describeError(thrown), timedOut: false };
    }
  }

  /** A handler that ignored its signal and finished after all: say so, since its work may now be done twice. */
  private reportLateFinish(handler: RegisteredHandler, delivery: Delivery, invoked: Promise<RunResult>): void {
    const abandonedAt = Date.now();
    void invoked.then((result) => {
      const outcome = result.ok ? 'completed' : `failed (${result.error})`;
      this.logger.warn(`${handler.name} on "${delivery.key}" (attempt ${delivery.attempt}) ${outcome} ${Date.now() - abandonedAt} ms after it timed out; that result was ignored`);
    });
  }
}
