/** Metadata key of @OnDelayExpired, prefixed so it cannot clash with another library's. */
export const DELAY_HANDLER_METADATA = 'nestjs-delay:handler';

/** Injection token of the active DelayDriver. */
export const DELAY_DRIVER = Symbol('nestjs-delay:driver');

/** Injection token of the validated, defaulted module options. */
export const DELAY_RESOLVED_OPTIONS = Symbol('nestjs-delay:resolved-options');

/**
 * Most items of a batch that `list` shows (`size` says how many it holds;
 * `get` shows them all): a listing of many large batches must not read them
 * whole.
 */
export const LISTED_BATCH_ITEMS = 10;

/** Injection token of an optional DelayTracePropagator (provided by the telemetry module). */
export const DELAY_TRACE_PROPAGATOR = Symbol('nestjs-delay:trace-propagator');
