import { SetMetadata } from '@nestjs/common';
import { DELAY_HANDLER_METADATA } from '../delay.constants';
import { DelayHandlerOptions } from '../interfaces/delay-handler-options.interface';
import { OrphanPolicy, RecurringDeclaration } from '../recurring/recurring-options';
import { DelayHandlerMetadata } from './on-delay-expired.decorator';

const HANDLER_FIELDS = ['attempts', 'backoff', 'concurrency', 'timeout', 'transactional'] as const;

/**
 * Declares a recurring schedule in code and marks the method as its topic's
 * handler. The schedule (key `'default'` unless `key` is given) is created or
 * updated at every bootstrap and fires once across the fleet per occurrence.
 *
 * Example:
 *     \@Recurring('reports.nightly', { cron: '0 3 * * *', timeZone: 'Europe/Paris' })
 *     async nightly({ occurrence }: DelayContext) { ... }
 */
export const Recurring = (topic: string, declaration: RecurringDeclaration): MethodDecorator => {
  const fields = (typeof declaration === 'object' && declaration !== null ? declaration : {}) as Record<string, unknown>;
  const handler: Record<string, unknown> = {};
  const schedule: Record<string, unknown> = {};
  for (const name of Object.keys(fields)) {
    if (name === 'key' || name === 'orphan') continue;
    if ((HANDLER_FIELDS as readonly string[]).includes(name)) handler[name] = fields[name];
    else schedule[name] = fields[name];
  }
  return SetMetadata<string, DelayHandlerMetadata>(DELAY_HANDLER_METADATA, {
    topic,
    options: handler as DelayHandlerOptions,
    recurring: {
      declared: {
        key: fields.key === undefined ? 'default' : (fields.key as string),
        orphan: fields.orphan === undefined ? 'remove' : (fields.orphan as OrphanPolicy),
        options: schedule as unknown as RecurringDeclaration,
      },
    },
  });
};

/**
 * Marks the method as the handler of a recurring topic whose schedules are
 * made at run time, one per key, with `DelayService.upsertRecurring`.
 */
export const OnRecurring = (topic: string, options: DelayHandlerOptions = {}): MethodDecorator =>
  SetMetadata<string, DelayHandlerMetadata>(DELAY_HANDLER_METADATA, { topic, options, recurring: {} });
