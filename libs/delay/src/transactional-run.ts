import { Inject, Injectable, Optional } from '@nestjs/common';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from './delay.constants';
import { ResolvedDelayOptions } from './delay.module-definition';
import { RegisteredHandler } from './delay-handler.registry';
import { HandlerContext } from './handler-context';
import { DelayDriver, Delivery } from './interfaces/delay-driver.interface';
import { withHandlerTransaction } from './transactions/handler-transaction';
import { refusedByServer } from './transactions/sql-state';
import { TransactionBinder } from './transactions/transaction-binder';
import { isNotCommitted } from './utils/not-committed';

/** How a transactional run ended without a throw: committed with its completion, or its arming was gone before it began (nothing ran). */
export type TransactionalRunEnd = 'committed' | 'gone';

/**
 * The run's work succeeded and its completion was written, but the commit
 * did not answer (a lost reply, a connection cut, a serialization failure at
 * commit): whether it committed is for the database to say. The driver's
 * retry of the run's token then decides: it finds the row gone if the
 * commit happened, and re-arms it if not (waiting, if the transaction is
 * somehow still open, for it to end).
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(override readonly cause: unknown) {
    super(`the commit of the run's transaction did not answer (${cause instanceof Error ? cause.message : String(cause)}); the action's row says whether it happened`);
  }
}

/**
 * Runs a handler marked `transactional: true`: one transaction of the
 * application's client (`transactions.run`) or of the driver's own
 * connection, in which, in order, the run's arming is locked (the run stops
 * if it is gone), the handler runs with `context.transaction` set (and as
 * the transaction of the DelayService calls it makes), and the completion
 * is written. It commits if all of that resolves; a throw, or the run's
 * signal aborting (its timeout, shutdown), rolls it back.
 */
@Injectable()
export class TransactionalRun {
  private readonly binder: TransactionBinder;
  private readonly open: (<T>(work: (transaction: unknown) => Promise<T>) => Promise<T>) | undefined;
  /** The driver opens the runs' transactions itself, and sends its first and last statements with BEGIN and COMMIT. */
  private readonly own: boolean;

  constructor(
    @Inject(DELAY_DRIVER) private readonly driver: DelayDriver,
    @Optional() @Inject(DELAY_RESOLVED_OPTIONS) options: ResolvedDelayOptions | null = null,
  ) {
    this.binder = new TransactionBinder(driver, options?.transactions);
    this.open = options?.transactions?.run ?? (driver.runTransaction ? (work) => driver.runTransaction!(work) : undefined);
    this.own = options?.transactions?.run === undefined && typeof driver.runOwnTransaction === 'function';
  }

  get driverName(): string {
    return this.driver.name;
  }

  /** Whether this driver can run `transactional` handlers. */
  get supported(): boolean {
    if (this.driver.supportsTransactions !== true) return false;
    return this.own || (typeof this.driver.beginRun === 'function' && typeof this.driver.completeRun === 'function' && this.open !== undefined);
  }

  /** `handled` is called when the handler has resolved, before a commit the driver may share with other runs (its own transactions only). */
  run(handler: RegisteredHandler, delivery: Delivery, context: HandlerContext, signal: AbortSignal, handled: () => void = () => undefined): Promise<TransactionalRunEnd> {
    return this.own ? this.runOwn(handler, delivery, context, signal, handled) : this.runOpened(handler, delivery, context, signal);
  }

  /** On the driver's own transaction: the driver sends the lock with BEGIN and the completion with COMMIT. */
  private async runOwn(handler: RegisteredHandler, delivery: Delivery, context: HandlerContext, signal: AbortSignal, onHandled: () => void): Promise<TransactionalRunEnd> {
    const { driver } = this;
    if (!driver.runOwnTransaction) throw new Error(`the "${driver.name}" driver cannot run transactional handlers`);
    let handled = false;
    try {
      return await driver.runOwnTransaction(delivery, handler.options.timeoutMs ?? Number.MAX_SAFE_INTEGER, async (transaction) => {
        // Called again if the run goes again on its own (its shared transaction could not commit).
        handled = false;
        await this.invoke(handler, context, signal, transaction);
        handled = true;
        onHandled();
      });
    } catch (error) {
      // The completion goes with the COMMIT: after the handler, a failure the server did not send leaves it in doubt,
      // unless the driver knows nothing committed.
      throw handled && !refusedByServer(error) && !isNotCommitted(error) ? new CommitOutcomeUnknownError(error) : error;
    }
  }

  /** On a transaction `transactions.run` (or the driver's runTransaction) opens: the lock and the completion are statements of their own in it. */
  private async runOpened(handler: RegisteredHandler, delivery: Delivery, context: HandlerContext, signal: AbortSignal): Promise<TransactionalRunEnd> {
    const { driver, open } = this;
    if (!open || !driver.beginRun || !driver.completeRun) throw new Error(`the "${driver.name}" driver cannot run transactional handlers`);
    const beginRun = driver.beginRun.bind(driver);
    const completeRun = driver.completeRun.bind(driver);
    let written = false;
    try {
      return await open(async (transaction) => {
        const bound = this.binder.bind(transaction);
        if (!bound) throw new Error('transactions.run handed the work no transaction');
        if (!(await beginRun(delivery, bound, handler.options.timeoutMs ?? Number.MAX_SAFE_INTEGER))) return 'gone' as const;
        await this.invoke(handler, context, signal, transaction);
        await completeRun(delivery, bound);
        written = true;
        return 'committed' as const;
      });
    } catch (error) {
      // A COMMIT the server refused (a deferred constraint, a serialization failure) rolled back: an ordinary failure.
      throw written && !refusedByServer(error) ? new CommitOutcomeUnknownError(error) : error;
    }
  }

  /** The handler, with `transaction` as its context's and as the one DelayService binds; rejects once the run is given up. */
  private async invoke(handler: RegisteredHandler, context: HandlerContext, signal: AbortSignal, transaction: unknown): Promise<void> {
    context.transaction = transaction;
    await untilAborted(
      withHandlerTransaction(transaction, signal, () => Promise.resolve(handler.invoke(context))),
      signal,
    ).finally(() => (context.transaction = undefined));
    // Given up meanwhile (timeout, shutdown): rolled back, as the failure already reported says.
    if (signal.aborted) throw signal.reason;
  }
}

/** `work`, or a rejection with the signal's reason as soon as it aborts: the transaction is then rolled back without waiting for the handler. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
