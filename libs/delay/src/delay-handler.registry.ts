import { Injectable } from '@nestjs/common';
import { ResolvedHandlerOptions } from './delay.module-definition';
import { DuplicateHandlerError } from './errors/duplicate-handler.error';
import { DelayContext } from './interfaces/delay-context.interface';
import { OrphanPolicy, RecurringOptions } from './recurring/recurring-options';

export interface RegisteredHandler {
  readonly topic: string;
  /** `ClassName.methodName`, for messages and logs. */
  readonly name: string;
  readonly options: ResolvedHandlerOptions;
  readonly invoke: (context: DelayContext) => unknown;
  /** A recurring topic's handler (@Recurring, @OnRecurring), with the schedule declared in code, if any. */
  readonly recurring?: { readonly declared?: { readonly key: string; readonly orphan: OrphanPolicy; readonly options: RecurringOptions } };
}

/** The handlers of this application, one per topic, filled by DelayExplorer at init. */
@Injectable()
export class DelayHandlerRegistry {
  private readonly handlers = new Map<string, RegisteredHandler>();
  private readonly recurringTopics = new Set<string>();

  register(handler: RegisteredHandler): void {
    const existing = this.handlers.get(handler.topic);
    if (existing) throw new DuplicateHandlerError(handler.topic, existing.name, handler.name);
    this.handlers.set(handler.topic, handler);
    if (handler.recurring) this.recurringTopics.add(handler.topic);
  }

  /** True when this process handles `topic` as a recurring topic. */
  isRecurring(topic: string): boolean {
    return this.recurringTopics.size > 0 && this.recurringTopics.has(topic);
  }

  /** The handlers of recurring topics that declare a schedule in code. */
  declaredSchedules(): Array<{ readonly topic: string; readonly key: string; readonly orphan: OrphanPolicy; readonly options: RecurringOptions }> {
    const declared: Array<{ topic: string; key: string; orphan: OrphanPolicy; options: RecurringOptions }> = [];
    for (const handler of this.handlers.values()) {
      if (handler.recurring?.declared) declared.push({ topic: handler.topic, ...handler.recurring.declared });
    }
    return declared;
  }

  get(topic: string): RegisteredHandler | undefined {
    return this.handlers.get(topic);
  }

  /** Topic → concurrency, as a driver's consumer needs it. */
  concurrencyByTopic(): Map<string, number> {
    return new Map(Array.from(this.handlers.values(), (handler) => [handler.topic, handler.options.concurrency]));
  }

  get size(): number {
    return this.handlers.size;
  }
}
