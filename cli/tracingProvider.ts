import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Tracing } from './tracing';

/**
 * The OpenTelemetry SDK's side of tracing, loaded only when tracing is on (cli/tracing.ts
 * `startTracing`): off, a process never loads it.
 */

/**
 * Registers a tracer provider whose spans go to `processor`, with an AsyncLocalStorage context
 * manager (so a span stays active across awaits) and the propagators of `OTEL_PROPAGATORS`
 * (default W3C trace context and baggage). Tests pass an in-memory processor.
 */
export function installTracing(serviceName: string, processor: SpanProcessor): Tracing {
  const resource = Resource.default().merge(new Resource({ 'service.name': serviceName }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable() });
  return {
    workflowSpans: { processor, resource },
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Spans batched and sent over OTLP/HTTP; the exporter also reads the other `OTEL_EXPORTER_OTLP_*` variables. */
export function installOtlpTracing(serviceName: string, tracesUrl: string): Tracing {
  return installTracing(serviceName, new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl })));
}
