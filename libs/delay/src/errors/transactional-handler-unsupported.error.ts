import { DelayError } from './delay.error';

/** A handler marked `transactional: true` on a driver that cannot run it in a transaction with its completion (the wheel, Redis, a custom driver without transactional runs): bootstrap fails. */
export class TransactionalHandlerUnsupportedError extends DelayError {
  readonly code = 'ERR_DELAY_TRANSACTIONAL_HANDLER_UNSUPPORTED';

  constructor(handler: string, driver: string) {
    super(
      `${handler} has the option transactional: true, which the "${driver}" delay driver cannot honour: its actions are not rows of your database, ` +
        `so a run's completion cannot commit in the handler's transaction. Use the postgres driver, or remove the option (the handler then runs at least once: make it idempotent).`,
    );
  }
}
