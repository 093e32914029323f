import { AsyncLocalStorage } from 'node:async_hooks';

/** The transaction of one transactional run, while the run lasts. */
interface RunTransaction {
  readonly transaction: unknown;
  open: boolean;
}

/**
 * The transaction of the transactional handler running in this async
 * context: DelayService writes through it when a call passes no
 * `transaction` and no ambient one is found, so the follow-up actions a
 * handler schedules commit with its run. Only while the run lasts: work the
 * handler left behind (a timer, a promise it did not await) that calls
 * DelayService after the run ended is refused (TransactionNotActiveError):
 * it would write into a transaction that is over (or, its connection back
 * in a pool, another run's), and on its own it would not be exactly once.
 * Such a call can pass `transaction: null` to write on its own.
 */
const handlerTransaction = new AsyncLocalStorage<RunTransaction>();

/** Runs `work` with `transaction` as the transaction of everything it calls, until `work` settles or `signal` aborts (the run was given up). */
export async function withHandlerTransaction<T>(transaction: unknown, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  const run: RunTransaction = { transaction, open: !signal.aborted };
  const close = (): void => {
    run.open = false;
  };
  signal.addEventListener('abort', close, { once: true });
  try {
    return await handlerTransaction.run(run, work);
  } finally {
    close();
    signal.removeEventListener('abort', close);
  }
}

/** Runs `work` outside any transactional run's context: a run the dispatcher starts from inside one is not that run's. */
export function outsideHandlerRun<T>(work: () => T): T {
  return handlerTransaction.exit(work);
}

/**
 * The transactional run this code was started from, if any: its transaction, and whether the run is still going
 * (false once it ended or was given up).
 */
export function currentHandlerRun(): { readonly transaction: unknown; readonly open: boolean } | undefined {
  return handlerTransaction.getStore();
}
