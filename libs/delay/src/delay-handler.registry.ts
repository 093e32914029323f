import { Injectable } from '@nestjs/common';
import { ResolvedHandlerOptions } from './delay.module-definition';
import { DuplicateHandlerError } from './errors/duplicate-handler.error';
import { DelayContext } from './interfaces/delay-context.interface';

export interface RegisteredHandler {
  readonly topic: string;
  /** `ClassName.methodName`, for messages and logs. */
  readonly name: string;
  readonly options: ResolvedHandlerOptions;
  readonly invoke: (context: DelayContext) => unknown;
}

/** The handlers of this application, one per topic, filled by DelayExplorer at init. */
@Injectable()
export class DelayHandlerRegistry {
  private readonly handlers = new Map<string, RegisteredHandler>();

  register(handler: RegisteredHandler): void {
    const existing = this.handlers.get(handler.topic);
    if (existing) throw new DuplicateHandlerError(handler.topic, existing.name, handler.name);
    this.handlers.set(handler.topic, handler);
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
