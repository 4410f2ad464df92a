import type { Middleware } from 'koa';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { AppState } from '../context';

export interface HttpMetrics {
  registry: Registry;
  middleware: Middleware<AppState>;
}

/**
 * Process metrics plus a latency histogram per method, route template and status. The route
 * template (not the raw path) keeps label cardinality bounded.
 */
export function createHttpMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flightdeck_' });
  const duration = new Histogram({
    name: 'flightdeck_http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const middleware: Middleware<AppState> = async (ctx, next) => {
    const end = duration.startTimer();
    try {
      await next();
    } finally {
      const matched = (ctx as unknown as { _matchedRoute?: string })._matchedRoute;
      end({
        method: ctx.method,
        route: typeof matched === 'string' ? matched : 'unmatched',
        status: String(ctx.status),
      });
    }
  };
  return { registry, middleware };
}
