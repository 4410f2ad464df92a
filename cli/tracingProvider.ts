import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowSpans } from '../worker/tracing';

/**
 * The OpenTelemetry SDK's side of tracing, loaded only when tracing is on (cli/tracing.ts
 * `startTracing`): off, a process never loads it. The process's tracer provider, registered
 * globally: the API middleware and Temporal's interceptors use it.
 */
export interface Tracing {
  /** For the worker: workflow spans leave the sandbox through a sink into the same processor. */
  workflowSpans: WorkflowSpans;
  /** Sends what is buffered, then unregisters the provider. */
  shutdown(): Promise<void>;
}

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
