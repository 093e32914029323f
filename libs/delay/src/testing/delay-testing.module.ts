import { DynamicModule, Module } from '@nestjs/common';
import { DelayModule } from '../delay.module';
import { DelayModuleOptions } from '../interfaces/delay-module-options.interface';
import { VirtualClock } from '../time/virtual-clock';

/**
 * DelayModule on the wheel driver and a VirtualClock, for an app's tests:
 *
 *     const clock = new VirtualClock();
 *     imports: [DelayTestingModule.forRoot({ clock })]
 *     ...
 *     await clock.advance('48h'); // handlers due in those 48 h have run
 *
 * An app that already imports DelayModule.forRoot can instead override the
 * DelayClock provider: `.overrideProvider(DelayClock).useValue(clock)`.
 */
@Module({})
export class DelayTestingModule {
  static forRoot(options: Omit<DelayModuleOptions, 'driver' | 'clock'> & { clock: VirtualClock; tickMs?: number }): DynamicModule {
    const { clock, tickMs, ...rest } = options;
    return DelayModule.forRoot({ ...rest, clock, driver: { type: 'wheel', tickMs: tickMs ?? 1 } });
  }
}
