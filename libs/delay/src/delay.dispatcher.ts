import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { backoffDelay } from './delay.module-definition';
import { consumerFailure } from './drivers/consumer-failure';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry, RegisteredHandler } from './delay-handler.registry';
import { HandlerAbortedError } from './errors/handler-aborted.error';
import { HandlerContext } from './handler-context';
import { HandlerRun, RunResult } from './handler-run';
import { HandlerRunTracker } from './handler-run-tracker';
import { DelayConsumer, Delivery, DeliveryOutcome } from './interfaces/delay-driver.interface';
import { DelayClock } from './time/clock';
import { isTickKey } from './recurring/occurrence-key';
import { RecurringTicker } from './recurring/recurring-ticker';
import { CommitOutcomeUnknownError, TransactionalRun } from './transactional-run';
import { currentHandlerRun, outsideHandlerRun } from './transactions/handler-transaction';
import { describeError } from './utils/describe-error';
import { inMicrotask } from './utils/in-microtask';
import { quoteInput } from './utils/quote-input';

/** How long an action waits when it reaches an instance that has no handler for it. */
const NO_HANDLER_RETRY_MS = 60_000;

const COMPLETED: RunResult = { ok: true };
const COMMITTED: RunResult = { ok: true, committed: true };
const GONE: RunResult = { ok: true, committed: true, gone: true };
/** Shared: an outcome is only read. */
const OUTCOME_COMPLETED: DeliveryOutcome = { kind: 'completed' };
/** A transactional run's completion committed with it: nothing is left for the driver to write. */
const OUTCOME_COMMITTED: DeliveryOutcome = { kind: 'completed', committed: true };

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
  private readonly runs = new HandlerRunTracker((run) => this.timeOut(run));
  /**
   * Runs of recurring occurrences, by topic and key, so that a driver telling
   * that one was cancelled while running (cancelPrevious) can fire its signal.
   * Only recurring handlers' runs are kept: one-off runs pay nothing for it.
   */
  private readonly revocable = new Map<string, Map<string, HandlerRun>>();

  constructor(
    private readonly registry: DelayHandlerRegistry,
    private readonly events: DelayEventBus,
    private readonly clock: DelayClock,
    @Optional() @Inject(RecurringTicker) private readonly ticker: RecurringTicker | null = null,
    @Optional() @Inject(TransactionalRun) private readonly transactional: TransactionalRun | null = null,
  ) {}

  get topics(): ReadonlyMap<string, number> {
    return this.registry.concurrencyByTopic();
  }

  isRecurringTopic(topic: string): boolean {
    return this.registry.isRecurring(topic);
  }

  /** Handlers running now in this process that it still waits for (timed-out ones no longer count). */
  get running(): number {
    return this.runs.size;
  }

  handle(delivery: Delivery): Promise<DeliveryOutcome> {
    return new Promise((resolve) => this.consume(delivery, resolve));
  }

  consume(delivery: Delivery, report: (outcome: DeliveryOutcome) => void): void {
    const { topic, key, attempt } = delivery;
    const handler = this.registry.get(topic);
    if (!handler) {
      this.logger.error(`No handler for topic ${quoteInput(topic)} in this process; action ${quoteInput(key)} is put back for ${NO_HANDLER_RETRY_MS} ms`);
      inMicrotask(() => this.tell(report, { kind: 'retry', delayMs: NO_HANDLER_RETRY_MS, error: 'no handler' }, delivery));
      return;
    }
    if (handler.recurring && this.ticker && isTickKey(key)) {
      // A schedule's tick: library work, never the handler's; never dead-lettered (that would end the schedule).
      void this.ticker.tick(delivery).then((outcome) => this.tell(report, outcome, delivery));
      return;
    }
    if (attempt > handler.options.attempts) {
      // Only a run that never reported back gets here (its process died, or its lease ran out):
      // giving up now keeps a handler that crashes its process from being redelivered forever.
      const error = `gave up after ${attempt - 1} attempt(s) that never finished (the process running them stopped)`;
      this.logger.error(`${handler.name} on ${quoteInput(key)}: ${error}; moved to the dead set`);
      this.events.emit(() => ({ type: 'dead', topic, key, attempt, size: delivery.items?.length, error }));
      inMicrotask(() => this.tell(report, { kind: 'dead', error }, delivery));
      return;
    }
    // The hot path: no event is built, and no closure made for one, unless someone listens.
    const { events } = this;
    if (events.listening) events.publish({ type: 'fired', topic, key, at: events.now(), attempt, size: delivery.items?.length, dueAt: new Date(delivery.dueAt) });
    this.run(handler, delivery, report);
  }

  /** A run's arming is gone (see DelayConsumer.revoke): its signal fires; its outcome is ignored by the driver. */
  revoke(topic: string, key: string, token: string): void {
    const byKey = this.revocable.get(topic);
    const run = byKey?.get(key);
    if (!byKey || !run || run.delivery.token !== token) return;
    byKey.delete(key);
    this.logger.warn(`${run.handlerName} on ${quoteInput(key)} was cancelled while running; its signal fires and its outcome is ignored`);
    run.abort(new HandlerAbortedError('cancelled', `${run.handlerName} on ${quoteInput(key)} was cancelled while running (overlap policy cancelPrevious, or cancel); its outcome is ignored`));
  }

  /**
   * Aborts every handler still running (shutdown calls it once its wait is
   * over): their signals fire and their runs end as failed now, so no
   * driver is left waiting on a handler that never settles.
   */
  abortRunning(message: string): void {
    for (const run of this.runs.takeAll()) {
      run.live = false;
      run.abort(new HandlerAbortedError('shutdown', message));
      this.finish(run, { ok: false, error: message, cause: 'shutdown' });
    }
  }

  private outcome(handler: RegisteredHandler, delivery: Delivery, result: RunResult): DeliveryOutcome {
    const { topic, key, attempt } = delivery;
    const size = delivery.items?.length;
    if (result.ok && result.gone) {
      this.logger.debug(`${handler.name} on ${quoteInput(key)} did not run: its arming was cancelled, re-armed or taken back before its transaction began`);
      return OUTCOME_COMMITTED;
    }
    if (result.ok) {
      const { events } = this;
      if (events.listening) events.publish({ type: 'completed', topic, key, at: events.now(), attempt, size });
      return result.committed ? OUTCOME_COMMITTED : OUTCOME_COMPLETED;
    }
    const { error } = result;
    if (result.cause === 'commit') {
      // Maybe no failure at all: the retry of the run's token finds the row gone if the commit happened (nothing then
      // runs again), and re-arms it, after the backoff, if it did not.
      this.logger.warn(`${handler.name} on ${quoteInput(key)}: ${error}`);
      return { kind: 'retry', delayMs: backoffDelay(handler.options.backoff, attempt), error };
    }
    if (result.cause === 'shutdown') {
      // Not the handler's failure: the process is stopping. The driver has handed the action back
      // (Redis) or is dropping it (wheel); this outcome only ends the wait, so it costs no backoff.
      this.logger.warn(`${handler.name} on ${quoteInput(key)} ${error}`);
      this.events.emit(() => ({ type: 'failed', topic, key, attempt, size, error }));
      return { kind: 'retry', delayMs: 0, error };
    }
    if (result.cause === 'timeout') this.events.emit(() => ({ type: 'timedOut', topic, key, attempt, size, error }));
    this.events.emit(() => ({ type: 'failed', topic, key, attempt, size, error }));
    if (attempt < handler.options.attempts) {
      const delayMs = backoffDelay(handler.options.backoff, attempt);
      this.logger.warn(`${handler.name} failed on ${quoteInput(key)} (attempt ${attempt}/${handler.options.attempts}), retrying in ${delayMs} ms: ${error}`);
      this.events.emit(() => ({ type: 'retrying', topic, key, attempt, size, error, retryAt: new Date(this.clock.now() + delayMs) }));
      return { kind: 'retry', delayMs, error };
    }
    this.logger.error(`${handler.name} failed on ${quoteInput(key)} after ${attempt} attempt(s); moved to the dead set: ${error}`);
    this.events.emit(() => ({ type: 'dead', topic, key, attempt, size, error }));
    return { kind: 'dead', error };
  }

  /**
   * Calls the handler; its outcome is reported when it settles, or at its
   * timeout, whichever comes first, and always after this returns. A
   * delivery costs the handler's own promise and one `then` on it (its two
   * callbacks and the promise it makes); the dispatcher makes no promise to
   * wait on, and no closure to resolve one.
   */
  private run(handler: RegisteredHandler, delivery: Delivery, report: (outcome: DeliveryOutcome) => void): void {
    const { timeoutMs } = handler.options;
    const run = new HandlerRun(handler, delivery, timeoutMs === undefined ? Infinity : performance.now() + timeoutMs, report);
    this.runs.add(run);
    if (handler.recurring) this.revocableOf(delivery.topic).set(delivery.key, run);
    try {
      if (handler.options.transactional && this.transactional) {
        // The handler's timeout bounds the handler; a commit shared with the runs after it (the postgres driver's own
        // transactions) gets as long again, counted from the handler's end.
        const handled = (): void => {
          if (run.live) this.runs.restart(run);
        };
        this.transactional.run(handler, delivery, new HandlerContext(delivery, run), run.signal, handled).then(
          (end) => this.settle(run, end === 'gone' ? GONE : COMMITTED),
          (thrown: unknown) => this.settle(run, thrown instanceof CommitOutcomeUnknownError ? { ok: false, error: thrown.message, cause: 'commit' } : failure(thrown)),
        );
        return;
      }
      // Not inside a transactional run's context (a claim a transactional handler's call set off): it is not this run's.
      const returned = currentHandlerRun() === undefined ? handler.invoke(new HandlerContext(delivery, run)) : outsideHandlerRun(() => handler.invoke(new HandlerContext(delivery, run)));
      if (isThenable(returned)) {
        const completed = (): void => this.settle(run, COMPLETED);
        const failed = (thrown: unknown): void => this.settle(run, failure(thrown));
        if (Object.getPrototypeOf(returned) === Promise.prototype) {
          // A native promise (what an async method returns) never calls back before `then` returns.
          returned.then(completed, failed);
        } else {
          // Any other thenable may call back at once (a report from inside consume) or throw: its `then` is
          // called in a later job. Its value is ignored, not adopted: adopting a thenable that resolves with
          // itself would loop in the microtask queue for ever, and no timer or I/O would run again.
          inMicrotask(() => {
            try {
              returned.then(completed, failed);
            } catch (thrown) {
              failed(thrown);
            }
          });
        }
      } else {
        inMicrotask(() => this.settle(run, COMPLETED));
      }
    } catch (thrown) {
      inMicrotask(() => this.settle(run, failure(thrown)));
    }
  }

  /** The handler settled: report it, unless the run was already given up (then only say it finished late). */
  private settle(run: HandlerRun, result: RunResult): void {
    if (run.live) {
      run.live = false;
      this.runs.remove(run);
      this.finish(run, result);
      return;
    }
    if (run.abandonedAt === undefined) return;
    // A handler that ignored its signal and finished after all: say so, since its work may now be done twice.
    const outcome = result.ok ? 'completed' : `failed (${result.error})`;
    const late = Math.round(performance.now() - run.abandonedAt);
    this.logger.warn(`${run.handlerName} on ${quoteInput(run.delivery.key)} (attempt ${run.delivery.attempt}) ${outcome} ${late} ms after it timed out; that result was ignored`);
  }

  /** The recurring runs going on of a topic, by key (a map per topic: no topic-and-key string is built per run). */
  private revocableOf(topic: string): Map<string, HandlerRun> {
    let byKey = this.revocable.get(topic);
    if (!byKey) {
      byKey = new Map();
      this.revocable.set(topic, byKey);
    }
    return byKey;
  }

  /** Called by the tracker once the run's deadline has passed (it is already out of the tracker). */
  private timeOut(run: HandlerRun): void {
    const error = `timed out after ${run.timeoutMs} ms`;
    run.live = false;
    run.abandonedAt = performance.now();
    run.abort(new HandlerAbortedError('timeout', `${run.handlerName} on "${run.delivery.key}" ${error}`));
    this.finish(run, { ok: false, error, cause: 'timeout' });
  }

  /** Reports the run's outcome to its driver, once. Deciding the outcome only logs and emits; should it throw anyway, the action is retried. */
  private finish(run: HandlerRun, result: RunResult): void {
    if (run.handler.recurring) {
      const byKey = this.revocable.get(run.delivery.topic);
      if (byKey?.get(run.delivery.key) === run) byKey.delete(run.delivery.key);
    }
    let outcome: DeliveryOutcome;
    try {
      outcome = this.outcome(run.handler, run.delivery, result);
    } catch (error) {
      outcome = consumerFailure(error);
    }
    this.tell(run.report, outcome, run.delivery);
  }

  /**
   * Hands an outcome to the driver's callback. One that throws is logged
   * here: it must not reach the handler's promise (an unhandled rejection)
   * or the timeout's timer (an uncaught exception).
   */
  private tell(report: (outcome: DeliveryOutcome) => void, outcome: DeliveryOutcome, delivery: Delivery): void {
    try {
      report(outcome);
    } catch (error) {
      this.logger.error(`The driver failed to apply the outcome (${outcome.kind}) of ${quoteInput(delivery.topic)} / ${quoteInput(delivery.key)}: ${describeError(error)}`);
    }
  }
}

function failure(thrown: unknown): RunResult {
  return { ok: false, error: describeError(thrown), cause: 'error' };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}
