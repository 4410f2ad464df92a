import Router from '@koa/router';
import type { GatheredMetrics } from '../metricsScrape';
import { assertMetricsToken } from '../middleware/auth';
import type { AppState } from '../context';

// Apart from the other system routes, so a worker's metrics listener (api/metricsListener.ts) does
// not load the API's route and schema modules.

/**
 * /metrics (Prometheus), as `scrape` gathers it, and with `gather` /metrics.json: the same figures
 * for another process's /metrics to include (api/metricsScrape.ts `processMetrics`). With `tokens`,
 * only for `Authorization: Bearer` one of them (401 otherwise).
 */
export function metricsRouter(
  scrape: () => Promise<{ contentType: string; text: string }>,
  tokens: readonly string[],
  gather?: () => Promise<GatheredMetrics>,
): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/metrics', async (ctx) => {
    if (tokens.length > 0) assertMetricsToken(ctx, tokens);
    const { contentType, text } = await scrape();
    ctx.type = contentType;
    ctx.body = text;
  });
  if (gather) {
    router.get('/metrics.json', async (ctx) => {
      if (tokens.length > 0) assertMetricsToken(ctx, tokens);
      ctx.body = await gather();
    });
  }
  return router;
}
