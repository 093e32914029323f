// The public API of nestjs-delay. Anything not exported here is internal.
export { DelayModule } from './delay.module';
export { DelayService } from './delay.service';
export { OnDelayExpired } from './decorators/on-delay-expired.decorator';
export { Recurring, OnRecurring } from './decorators/recurring.decorator';
export { DELAY_DRIVER, DELAY_TRACE_PROPAGATOR, LISTED_BATCH_ITEMS } from './delay.constants';

export type { DelayModuleOptions, DelayDriverConfig, WheelDriverConfig, RedisDriverConfig, PostgresDriverConfig } from './interfaces/delay-module-options.interface';
export type { PgPoolLike, PgPoolClientLike } from './interfaces/postgres-pool.interface';
export { postgresMigrations, POSTGRES_DEFAULT_SCHEMA } from './drivers/postgres/postgres-migrations';
export type { PostgresMigration } from './drivers/postgres/postgres-migrations';
export type { RedisConnectionOptions, RedisClientLike } from './interfaces/redis-client.interface';
export type { DelayOptionsFactory } from './interfaces/delay-options-factory.interface';
export type { DelayHandlerOptions, BackoffOption } from './interfaces/delay-handler-options.interface';
export type { DelayContext } from './interfaces/delay-context.interface';
export type { DelayEvent, DelayEventType } from './interfaces/delay-event.interface';
export type { TopicSummary } from './interfaces/topic-summary.interface';
export type { DelayHealth, TopicHealth, DriverHealth } from './interfaces/delay-health.interface';
export type { DelayTracePropagator } from './interfaces/delay-trace-propagator.interface';
export type { PendingAction, DeadAction, ActionState, Page, PageRequest } from './interfaces/pending-action.interface';
export type {
  ScheduleOptions,
  ScheduleEntry,
  ActionOptions,
  RescheduleOptions,
  WriteOptions,
  DueTime,
  IfExists,
  CollectOptions,
  BatchStatus,
} from './interfaces/schedule-options.interface';
export type { DelayTransactionAdapter, DelayTransactionOptions, DriverTransaction, SqlRows } from './interfaces/delay-transaction.interface';
export { ambientFromTransactionHost } from './transactions/ambient-from-transaction-host';
export type { TransactionHostLike } from './transactions/ambient-from-transaction-host';
export type {
  DelayDriver,
  DelayConsumer,
  Delivery,
  DeliveryOutcome,
  DueSpec,
  ScheduleCommand,
  ScheduleManyCommand,
  CollectCommand,
  CollectResult,
  RescheduleCommand,
  ScheduleResult,
  StoredAction,
  StoredDeadAction,
  AdvanceSeriesCommand,
  AdvanceSeriesResult,
  SeriesExpectation,
  SeriesOccurrence,
  SeriesBlocker,
  SeriesPageRequest,
} from './interfaces/delay-driver.interface';

export { WheelDriver } from './drivers/wheel/wheel.driver';
export type { WheelDriverOptions } from './drivers/wheel/wheel.driver';

export { DelayClock, SystemClock } from './time/clock';
export type { TimerHandle } from './time/clock';
export { VirtualClock } from './time/virtual-clock';
export { parseDuration } from './time/duration';
export type { Duration } from './time/duration';
export type { RecurrenceSpec, CronRecurrence, IntervalRecurrence, DstGapPolicy, DstOverlapPolicy } from './recurring/recurrence-spec';
export type {
  MissedRunPolicy,
  OverlapPolicy,
  RecurringPolicies,
  RecurringOptions,
  RecurringDeclaration,
  RecurringSchedule,
  RecurringOccurrence,
  RecurringRun,
  RecurringBlocker,
  OrphanPolicy,
} from './recurring/recurring-options';
export type { RecurringPage, RecurringPageRequest, RecurringUpsert } from './recurring/recurring-page';

export * from './errors';
