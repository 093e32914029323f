import { createNoopMeter, metrics, ProxyTracerProvider, trace } from '@opentelemetry/api';

/**
 * Whether an OpenTelemetry SDK registered a MeterProvider. Without one every
 * instrument is a no-op, so the module does not even listen to events: an
 * app that installs no SDK pays nothing per action.
 */
export function hasMeterProvider(): boolean {
  return !(metrics.getMeter('nestjs-delay') instanceof createNoopMeter().constructor);
}

/** Whether an OpenTelemetry SDK registered a TracerProvider (the API's proxy then has a real delegate). */
export function hasTracerProvider(): boolean {
  const provider = trace.getTracerProvider();
  // A fresh proxy's delegate is the API's shared no-op provider: the global one has the same until an SDK registers.
  const noop = new ProxyTracerProvider().getDelegate();
  return !(provider instanceof ProxyTracerProvider ? provider.getDelegate() === noop : provider === noop);
}
