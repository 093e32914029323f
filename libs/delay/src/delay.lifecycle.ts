import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DELAY_DRIVER, DELAY_RESOLVED_OPTIONS } from './delay.constants';
import { DelayDispatcher } from './delay.dispatcher';
import { ResolvedDelayOptions } from './delay.module-definition';
import { DelayEventBus } from './delay-event.bus';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { DelayDriver } from './interfaces/delay-driver.interface';
import { DeclarationHeartbeat } from './recurring/declaration-heartbeat';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { DelayClock } from './time/clock';

/**
 * Starts consuming once the whole application is up (handlers were collected
 * in onModuleInit), drains running handlers before shutdown, then closes the
 * driver's timers and connections.
 */
@Injectable()
export class DelayLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger(DelayLifecycle.name);
  private heartbeat: DeclarationHeartbeat | undefined;

  constructor(
    @Inject(DELAY_DRIVER) private readonly driver: DelayDriver,
    @Inject(DELAY_RESOLVED_OPTIONS) private readonly options: ResolvedDelayOptions,
    private readonly dispatcher: DelayDispatcher,
    private readonly registry: DelayHandlerRegistry,
    private readonly events: DelayEventBus,
    private readonly schedules: RecurringSchedules,
    private readonly clock: DelayClock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.driver.onStoreReset?.((detail) => this.events.emit(() => ({ type: 'storeReset', topic: '*', key: '', error: detail })));
    this.driver.onStoreEvicting?.((detail) => this.events.emit(() => ({ type: 'storeEvicting', topic: '*', key: '', error: detail })));
    // Schedules declared by @Recurring: created or brought up to date (the same call from every instance of a
    // rolling deploy changes nothing twice; an occurrence's identity makes a second run of it impossible).
    const removable = new Map<string, string[]>();
    for (const { topic, key, orphan, options } of this.registry.declaredSchedules()) {
      await this.schedules.upsert(topic, key, options, { orphan });
      if (orphan === 'remove') removable.set(topic, [...(removable.get(topic) ?? []), key]);
    }
    // While this instance runs, its declarations are marked in the store: a schedule no instance declares any more is removed.
    this.heartbeat = new DeclarationHeartbeat(this.driver, this.clock, this.options.recurringOrphanGraceMs, Array.from(removable, ([topic, keys]) => ({ topic, keys })));
    await this.heartbeat.start();
    if (!this.options.consume) {
      this.logger.log(`Delay driver "${this.driver.name}" started as producer only (consume: false)`);
      return;
    }
    await this.driver.start(this.dispatcher);
    this.logger.log(`Delay driver "${this.driver.name}" consuming ${this.registry.size} topic(s)`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.heartbeat?.stop();
    await this.driver.drain(this.options.shutdownTimeoutMs);
    // Handlers still running now outlived shutdownTimeout: their signals tell them to stop.
    if (this.dispatcher.running > 0) {
      this.dispatcher.abortRunning(`interrupted: still running when shutdown stopped waiting after ${this.options.shutdownTimeoutMs} ms`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.driver.close();
    this.events.complete();
  }
}
