import { DelayError } from './delay.error';

/** DelayAdminModule.register was given options it cannot use; `problems` lists every one. */
export class InvalidAdminOptionsError extends DelayError {
  readonly code = 'ERR_DELAY_INVALID_ADMIN_OPTIONS';

  constructor(readonly problems: readonly string[]) {
    super(`Invalid DelayAdminModule options:\n  - ${problems.join('\n  - ')}`);
  }
}
