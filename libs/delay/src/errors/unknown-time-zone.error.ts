import { DelayError } from './delay.error';
import { quoteInput } from '../utils/quote-input';

/** A time zone that this runtime's Intl does not know (a typo, or a name newer than its time zone data). */
export class UnknownTimeZoneError extends DelayError {
  readonly code = 'ERR_DELAY_UNKNOWN_TIME_ZONE';

  constructor(readonly timeZone: unknown, cause?: unknown) {
    super(
      `Unknown time zone ${quoteInput(timeZone)}: expected an IANA name such as "Europe/Paris", "America/New_York" or "UTC" ` +
        '(Intl.supportedValuesOf("timeZone") lists the names this runtime knows)',
      cause,
    );
  }
}
