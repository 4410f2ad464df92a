import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import type { ClientInterceptors } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';

/**
 * Tracing across Temporal with the SDK's OpenTelemetry interceptors, loaded by the worker only with
 * tracing on (worker/runtime.ts). Workflow spans are made inside the workflow sandbox and leave it
 * through a sink.
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

/** The sink the workflow interceptors export through, into the process's span processor. */
export function workflowSpanSinks(spans: WorkflowSpans): InjectedSinks<OpenTelemetrySinks> {
  return { exporter: makeWorkflowExporter(spans.processor, spans.resource) };
}
