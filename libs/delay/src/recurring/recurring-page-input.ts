import { InvalidKeyError } from '../errors/invalid-key.error';
import { InvalidPageError } from '../errors/invalid-page.error';
import { quoteInput } from '../utils/quote-input';
import type { RecurringPageRequest } from './recurring-page';
import { validateSeriesKey } from './series-key';

/** Schedules per page of listRecurringPage when no limit is given. */
export const DEFAULT_RECURRING_PAGE = 100;
/** The most schedules one page of listRecurringPage reads. */
export const MAX_RECURRING_PAGE = 1000;

/** Checks a page of listRecurringPage; throws InvalidPageError (nothing is read) otherwise. */
export function validateRecurringPage(page: RecurringPageRequest | undefined): { after: string | null; limit: number } {
  if (page !== undefined && (page === null || typeof page !== 'object')) throw new InvalidPageError(`a page must be an object, got ${quoteInput(page)}`);
  const after = page?.after ?? null;
  const limit = page?.limit ?? DEFAULT_RECURRING_PAGE;
  if (after !== null) {
    try {
      validateSeriesKey(after);
    } catch (error) {
      if (error instanceof InvalidKeyError) throw new InvalidPageError(`after must be a schedule key (the next of the page before): ${error.message}`);
      throw error;
    }
  }
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECURRING_PAGE) {
    throw new InvalidPageError(`limit must be a whole number from 1 to ${MAX_RECURRING_PAGE}, got ${quoteInput(limit)}`);
  }
  return { after, limit };
}
