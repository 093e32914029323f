import { Controller, DynamicModule, Module, UseFilters, UseGuards } from '@nestjs/common';
import { DELAY_ADMIN_OPTIONS } from './delay-admin.constants';
import { DelayAdminController } from './delay-admin.controller';
import { DelayAdminErrorFilter } from './delay-admin-error.filter';
import { DelayAdminOptions } from './delay-admin-options.interface';
import { resolveAdminOptions } from './resolve-admin-options';

/**
 * The admin page, mounted where the app chooses:
 *
 *     DelayAdminModule.register({ path: 'admin/delays', writable: true, guards: [AdminGuard] })
 *
 * Server-rendered HTML with inline styles; it needs DelayModule in the app
 * (it uses DelayService). Writable without a guard refuses to start.
 */
@Module({})
export class DelayAdminModule {
  static register(options: DelayAdminOptions): DynamicModule {
    const resolved = resolveAdminOptions(options);
    // A class per mount: the route path and guards are class decorators, and a
    // subclass keeps one mount's from leaking into another's.
    class MountedDelayAdminController extends DelayAdminController {}
    Controller(resolved.path)(MountedDelayAdminController);
    UseFilters(DelayAdminErrorFilter)(MountedDelayAdminController);
    const guards = options.guards ?? [];
    if (guards.length > 0) UseGuards(...guards)(MountedDelayAdminController);
    return {
      module: DelayAdminModule,
      imports: [...(options.imports ?? [])],
      controllers: [MountedDelayAdminController],
      providers: [{ provide: DELAY_ADMIN_OPTIONS, useValue: resolved }],
    };
  }
}
