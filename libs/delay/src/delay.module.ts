import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from './delay.constants';
import { DelayDispatcher } from './delay.dispatcher';
import { DelayExplorer } from './delay.explorer';
import { TransactionalRun } from './transactional-run';
import { DelayLifecycle } from './delay.lifecycle';
import { ConfigurableDelayModule, DELAY_MODULE_OPTIONS, resolveDelayOptions, ResolvedDelayOptions } from './delay.module-definition';
import { DelayService } from './delay.service';
import { createDelayDriver } from './delay-driver.factory';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { DelayModuleOptions } from './interfaces/delay-module-options.interface';
import { DelayClock, SystemClock } from './time/clock';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { RecurringTicker } from './recurring/recurring-ticker';

/**
 * `DelayModule.forRoot({...})` or `DelayModule.forRootAsync({ useFactory,
 * inject })`; global unless `isGlobal: false`. Exports DelayService and the
 * DelayClock (override the latter with a VirtualClock in tests).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: DELAY_RESOLVED_OPTIONS,
      inject: [DELAY_MODULE_OPTIONS],
      useFactory: (options: DelayModuleOptions) => resolveDelayOptions(options),
    },
    {
      provide: DelayClock,
      inject: [DELAY_RESOLVED_OPTIONS],
      useFactory: (options: ResolvedDelayOptions) => options.clock ?? new SystemClock(),
    },
    {
      provide: DELAY_DRIVER,
      inject: [DELAY_RESOLVED_OPTIONS, DelayClock],
      useFactory: createDelayDriver,
    },
    DelayHandlerRegistry,
    DelayEventBus,
    DelayDispatcher,
    DelayExplorer,
    DelayLifecycle,
    DelayService,
    RecurringTicker,
    RecurringSchedules,
    TransactionalRun,
  ],
  exports: [DelayService, DelayClock],
})
export class DelayModule extends ConfigurableDelayModule {}
