import { Injectable, Module } from '@nestjs/common';
import { DelayContext, DelayModule, DelayModuleOptions, DelayOptionsFactory, DelayService, OnDelayExpired } from 'nestjs-delay';
import { VirtualClock } from 'nestjs-delay/testing';
import { useApps } from '../wheel/support/apps';

// The README's "Options from a class" section: forRootAsync with useClass and
// useExisting, each class implementing the exported DelayOptionsFactory.

const clock = new VirtualClock();

@Injectable()
class DelayConfig implements DelayOptionsFactory {
  calls = 0;

  createDelayOptions(): DelayModuleOptions {
    this.calls += 1;
    return { clock, driver: { type: 'wheel', tickMs: 1 }, defaults: { attempts: 1 } };
  }
}

@Module({ providers: [DelayConfig], exports: [DelayConfig] })
class DelayConfigModule {}

@Injectable()
class Reminders {
  readonly fired: string[] = [];

  @OnDelayExpired('reminder.due')
  remind({ key }: DelayContext): void {
    this.fired.push(key);
  }
}

describe('DelayModule.forRootAsync with a DelayOptionsFactory class', () => {
  const apps = useApps();

  it('useClass: Nest builds the class and calls createDelayOptions() once', async () => {
    const app = await apps.boot({ imports: [DelayModule.forRootAsync({ useClass: DelayConfig })], providers: [Reminders] });
    await app.get(DelayService).schedule('reminder.due', 'r-1', { delay: '1h' });
    await clock.advance('1h');
    expect(app.get(Reminders).fired).toEqual(['r-1']);
  });

  it('useExisting: the options come from the instance another module exports, not a second one', async () => {
    const app = await apps.boot({
      imports: [DelayModule.forRootAsync({ imports: [DelayConfigModule], useExisting: DelayConfig })],
      providers: [Reminders],
    });
    expect(app.get(DelayConfig, { strict: false }).calls).toBe(1);
    await app.get(DelayService).schedule('reminder.due', 'r-2', { delay: '5m' });
    await clock.advance('5m');
    expect(app.get(Reminders).fired).toEqual(['r-2']);
  });
});
