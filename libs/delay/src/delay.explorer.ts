import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DELAY_HANDLER_METADATA, DELAY_RESOLVED_OPTIONS } from './delay.constants';
import { resolveHandlerOptions, ResolvedDelayOptions } from './delay.module-definition';
import { TransactionalHandlerUnsupportedError } from './errors/transactional-handler-unsupported.error';
import { TransactionalRun } from './transactional-run';
import { DelayHandlerRegistry } from './delay-handler.registry';
import { DelayHandlerMetadata } from './decorators/on-delay-expired.decorator';
import { ScopedHandlerError } from './errors/scoped-handler.error';
import { DelayContext } from './interfaces/delay-context.interface';
import { validateTopic } from './validation/action-input';
import { checkOrphanPolicy, checkRecurringOptions } from './recurring/check-recurring-options';
import { RecurringSchedules } from './recurring/recurring-schedules';
import { validateSeriesKey } from './recurring/series-key';

/** Nest's InstanceWrapper, named through the public DiscoveryService rather than a deep import. */
type InstanceWrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Finds every @OnDelayExpired method on the application's providers and
 * controllers at init, checks it and registers it. Providers built with
 * useFactory or useValue are found through their instance's prototype.
 */
@Injectable()
export class DelayExplorer implements OnModuleInit {
  private readonly logger = new Logger(DelayExplorer.name);

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly registry: DelayHandlerRegistry,
    @Inject(DELAY_RESOLVED_OPTIONS) private readonly options: ResolvedDelayOptions,
    private readonly schedules: RecurringSchedules,
    private readonly transactional: TransactionalRun,
  ) {}

  onModuleInit(): void {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    // An alias (`useExisting`) is a second wrapper around the same instance: explore each instance once.
    const explored = new Set<unknown>();
    for (const wrapper of wrappers) {
      const instance: unknown = wrapper.instance;
      if (instance && typeof instance === 'object') {
        if (explored.has(instance)) continue;
        explored.add(instance);
      }
      this.explore(wrapper);
    }
    if (this.registry.size > 0) this.logger.log(`${this.registry.size} delay handler(s) registered`);
  }

  private explore(wrapper: InstanceWrapper): void {
    const prototype = this.prototypeOf(wrapper);
    if (!prototype) return;
    for (const method of this.scanner.getAllMethodNames(prototype)) {
      const metadata = this.reflector.get<DelayHandlerMetadata | undefined>(DELAY_HANDLER_METADATA, prototype[method] as () => unknown);
      if (!metadata) continue;
      const className = (prototype.constructor as { name?: string } | undefined)?.name || String(wrapper.name);
      const name = `${className}.${method}`;
      if (!wrapper.isDependencyTreeStatic() || wrapper.isTransient) {
        throw new ScopedHandlerError(name, wrapper.isTransient ? 'transient' : 'request-scoped');
      }
      const topic = validateTopic(metadata.topic);
      const instance = wrapper.instance as Record<string, (context: DelayContext) => unknown>;
      const declared = metadata.recurring?.declared;
      if (declared) {
        // A bad schedule fails bootstrap here, before anything is written.
        validateSeriesKey(declared.key);
        checkRecurringOptions(declared.options, this.schedules.minIntervalMs);
        checkOrphanPolicy(declared.orphan);
      }
      const options = resolveHandlerOptions(metadata.options, this.options.defaults, `${metadata.recurring ? '@Recurring' : '@OnDelayExpired'} options of ${name}`);
      if (options.transactional && !this.transactional.supported) throw new TransactionalHandlerUnsupportedError(name, this.transactional.driverName);
      this.registry.register({
        topic,
        name,
        options,
        invoke: (context) => instance[method](context),
        recurring: metadata.recurring,
      });
    }
  }

  /** The prototype to scan: the instance's when there is one, else the class's (scoped providers). */
  private prototypeOf(wrapper: InstanceWrapper): Record<string, unknown> | undefined {
    const instance: unknown = wrapper.instance;
    if (instance && typeof instance === 'object') {
      const prototype: unknown = Object.getPrototypeOf(instance);
      if (prototype && prototype !== Object.prototype) return prototype as Record<string, unknown>;
    }
    const metatype = wrapper.metatype as { prototype?: unknown } | null;
    if (!wrapper.inject && typeof metatype === 'function' && metatype.prototype) return metatype.prototype as Record<string, unknown>;
    return undefined;
  }
}
