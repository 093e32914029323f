/** Injection token of the telemetry module's checked options. */
export const DELAY_TELEMETRY_OPTIONS = Symbol('nestjs-delay:telemetry-options');

/** The attribute every instrument and span carries the topic under. */
export const TOPIC_ATTRIBUTE = 'delay.topic';
