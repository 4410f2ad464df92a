import { Resource } from '@opentelemetry/resources';
import { NoopSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { ClientInterceptors } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';

/**
 * Tracing across Temporal with the SDK's OpenTelemetry interceptors. Every interceptor uses the
 * global tracer provider, so with tracing off (none registered) they make no-op spans and carry
 * no headers. Workflow spans are made inside the workflow sandbox and leave it through a sink.
 */

/** Where workflow spans go: the span processor and resource of the process's tracer provider. */
export interface WorkflowSpans {
  processor: SpanProcessor;
  resource: Resource;
}

/** Client calls (starts, signals) open a span and put its context into the workflow's headers. */
export function tracingClientInterceptors(): ClientInterceptors {
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor()] };
}

/** Each activity runs in a span whose parent is the workflow span that scheduled it. */
export const activityTracing: ActivityInterceptorsFactory = (context) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(context),
});

/**
 * The sink the workflow interceptors export through. A traced bundle can reach a worker with
 * tracing off (FLIGHTDECK_WORKFLOW_BUNDLE), so the sink always exists (the worker logs an error
 * for every call to a missing sink); with tracing off it drops the spans.
 */
export function workflowSpanSinks(spans?: WorkflowSpans): InjectedSinks<OpenTelemetrySinks> {
  return {
    exporter: makeWorkflowExporter(
      spans?.processor ?? new NoopSpanProcessor(),
      spans?.resource ?? new Resource({}),
    ),
  };
}
