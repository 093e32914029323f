import { DelayError } from './delay.error';

/**
 * DelayAdminModule was mounted with writes enabled and no guard: anyone who
 * can reach the page could cancel or re-run actions, so the app does not start.
 */
export class AdminGuardRequiredError extends DelayError {
  readonly code = 'ERR_DELAY_ADMIN_GUARD_REQUIRED';

  constructor(path: string) {
    super(
      `DelayAdminModule at "/${path}" is writable but has no guard. ` +
        'Pass guards: [YourAdminGuard] (it decides who may redrive, cancel, run now, pause and resume), or mount it with writable: false.',
    );
  }
}
