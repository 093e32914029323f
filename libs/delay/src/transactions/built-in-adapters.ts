import { DelayTransactionAdapter } from '../interfaces/delay-transaction.interface';

/**
 * The adapters tried after the application's own, in order. Each recognises
 * its client by shape, not by import, so none of those packages is needed
 * to compile or run nestjs-delay.
 */
export const BUILT_IN_TRANSACTION_ADAPTERS: ReadonlyArray<DelayTransactionAdapter> = [];
