import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The transaction of the transactional handler running in this async
 * context: DelayService writes through it when a call passes no
 * `transaction` and no ambient one is found, so the follow-up actions a
 * handler schedules commit with its run.
 */
const handlerTransaction = new AsyncLocalStorage<unknown>();

/** Runs `work` with `transaction` as the handler's transaction of everything it calls. */
export function withHandlerTransaction<T>(transaction: unknown, work: () => T): T {
  return handlerTransaction.run(transaction, work);
}

/** The running transactional handler's transaction, if this code runs inside one. */
export function currentHandlerTransaction(): unknown {
  return handlerTransaction.getStore();
}
