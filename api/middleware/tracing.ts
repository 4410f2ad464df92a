import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import type { AppState } from '../context';

const tracer = trace.getTracer('flightdeck-api');

/**
 * One server span per request, continuing the caller's trace when it sends `traceparent`, and
 * active for everything the request does: log lines carry its ids, and outbox rows carry its
 * context to the workflows they start. Outermost, so the access log line is inside it. With
 * tracing off the OpenTelemetry API is a no-op and this costs next to nothing.
 */
export function tracing(): Middleware<AppState> {
  return async (ctx, next) => {
    const parent = propagation.extract(context.active(), ctx.headers);
    const span = tracer.startSpan(
      ctx.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': ctx.method,
          'url.path': ctx.path,
          'url.scheme': ctx.protocol,
        },
      },
      parent,
    );
    // The problem middleware inside turns every error into a response, so ctx.status is what was sent.
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      // The route template, not the path, names the span: it keeps span names few and groupable.
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
      if (typeof route === 'string') {
        span.updateName(`${ctx.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', ctx.status);
      if (ctx.state.requestId) span.setAttribute('flightdeck.request_id', ctx.state.requestId);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
