import { DelayError } from './delay.error';

/** Module or handler options that fail validation; `problems` lists every one found, not just the first. */
export class InvalidDelayOptionsError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_OPTIONS';

  constructor(
    readonly where: string,
    readonly problems: readonly string[],
  ) {
    super(`Invalid ${where}:\n  - ${problems.join('\n  - ')}`);
  }
}
