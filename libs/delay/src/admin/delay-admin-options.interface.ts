import { CanActivate, ModuleMetadata, Type } from '@nestjs/common';

/** How DelayAdminModule.register mounts the admin page. */
export interface DelayAdminOptions {
  /** Where the page lives, e.g. 'admin/delays' (after the app's global prefix, if any). */
  readonly path: string;
  /**
   * Shows the redrive, cancel, run now, pause and resume buttons and accepts
   * them. Default false: the page only reads. Writable needs at least one guard.
   */
  readonly writable?: boolean;
  /**
   * Guards for every route of the page, reads and writes: they decide who
   * may look and who may act (a guard sees the HTTP method). Classes are
   * built in the admin module, so what they inject must come from a global
   * module or from `imports`.
   */
  readonly guards?: ReadonlyArray<Type<CanActivate> | CanActivate>;
  /** Modules the guards' dependencies come from. */
  readonly imports?: ModuleMetadata['imports'];
  /** Actions per page on the pending and dead lists; default 50, at most 500. */
  readonly pageSize?: number;
  /** Heading and window title; default 'Delayed actions'. */
  readonly title?: string;
}

/** The options once checked, as the controller reads them. */
export interface ResolvedDelayAdminOptions {
  readonly path: string;
  readonly writable: boolean;
  readonly pageSize: number;
  readonly title: string;
}
