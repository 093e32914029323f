import { SetMetadata } from '@nestjs/common';
import { DELAY_HANDLER_METADATA } from '../delay.constants';
import { DelayHandlerOptions } from '../interfaces/delay-handler-options.interface';
import { OrphanPolicy, RecurringDeclaration } from '../recurring/recurring-options';

export interface DelayHandlerMetadata {
  readonly topic: string;
  readonly options: DelayHandlerOptions;
  /** Set by @Recurring (with the schedule it declares) and @OnRecurring. */
  readonly recurring?: { readonly declared?: { readonly key: string; readonly orphan: OrphanPolicy; readonly options: RecurringDeclaration } };
}

/**
 * Marks a method of a singleton provider or controller as the handler of a
 * topic. It is called with a {@link DelayContext} when an action of that
 * topic falls due; resolving completes the action, throwing retries it.
 *
 * Example:
 *     \@OnDelayExpired('order.unpaid', { attempts: 5 })
 *     async cancelUnpaid({ key }: DelayContext<{ total: number }>) { ... }
 */
export const OnDelayExpired = (topic: string, options: DelayHandlerOptions = {}): MethodDecorator =>
  SetMetadata<string, DelayHandlerMetadata>(DELAY_HANDLER_METADATA, { topic, options });
