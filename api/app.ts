// First: `.openapi()` exists only on schemas built after zod is extended (api/schemas/zod.ts).
import './schemas/zod';
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import type { Database } from '../db/database';
import { recordSelectorOverruns } from '../engine/selectors';
import type { StoreFactory } from '../application';
import { SYSTEM_ACTOR } from '../domain/audit';
import { authenticate } from './middleware/auth';
import { urlInput } from './middleware/urlInput';
import { jsonBody } from './middleware/body';
import { createHttpMetrics } from './middleware/metrics';
import { problemMiddleware } from './middleware/problem';
import { requestContext } from './middleware/requestContext';
import { tracing } from './middleware/tracing';
import { assertSecureForPull, requestTransport, type TransportPolicy } from './middleware/transport';
import { API_PREFIXES, buildOpenApiDocument } from './openapi';
import type { Route } from './route';
import type { AppState } from './context';
import { deploymentPlanRoutes } from './routes/deploymentPlans';
import { deploymentRoutes } from './routes/deployments';
import { environmentRoutes } from './routes/environments';
import { jobAgentRoutes } from './routes/jobAgents';
import { policyRoutes } from './routes/policies';
import { pullRoutes } from './routes/pull';
import { githubWebhookRoutes } from './routes/githubWebhook';
import { jobRoutes } from './routes/jobs';
import { releaseRoutes } from './routes/releases';
import { relationshipRuleRoutes } from './routes/relationshipRules';
import { releaseTargetRoutes, releaseTargetStateRoutes } from './routes/releaseTargets';
import { resourceLookupRoutes } from './routes/resourceLookups';
import { resourceProviderRoutes } from './routes/resourceProviders';
import { resourceRoutes } from './routes/resources';
import { policySkipRoutes } from './routes/policySkips';
import { holdRoutes } from './routes/holds';
import { rolloutRoutes } from './routes/rollouts';
import { doraRoutes } from './routes/dora';
import { auditEventRoutes } from './routes/auditEvents';
import { webhookRoutes } from './routes/webhooks';
import { workspaceSecretRoutes } from './routes/workspaceSecrets';
import { runbookRoutes } from './routes/runbooks';
import { metricsRouter } from './routes/metrics';
import { documentationRouter, healthRoutes, type ReadinessChecks } from './routes/system';
import { systemRoutes } from './routes/systems';
import { variableSetRoutes } from './routes/variableSets';
import { variableRoutes } from './routes/variables';
import { versionDependencyRoutes } from './routes/versionDependencies';
import { versionRoutes } from './routes/versions';
import { workspaceRoutes } from './routes/workspaces';
import { domainEvents, registerStateGauges, STATE_READ_INTERVAL_MS } from '../engine/metrics';
import { metricsListenerApp } from './metricsListener';
import { processMetrics, prometheusText, scrapeMetrics } from './metricsScrape';
import { uiRouter } from './routes/ui';

export interface AppDeps {
  /** Each request's stores (application/index.ts `storeFactory`; fakes in route tests). */
  stores: StoreFactory;
  /**
   * Where the selector overruns met while serving are written and the state gauges of /metrics
   * are read; absent (route tests), neither is.
   */
  orm?: Database;
  logger: Logger;
  readiness: ReadinessChecks;
  bodyLimit: string;
  adminToken?: string;
  /**
   * /metrics, served by `metricsApp` (its own listener, on loopback by default), and by the API's
   * app only behind a token: `token` (FLIGHTDECK_METRICS_TOKEN) or the admin token. With `token`,
   * `metricsApp` asks for it as well.
   */
  metrics?: {
    token?: string;
    /** Show the labels that tell workspaces apart (FLIGHTDECK_METRICS_TENANT_LABELS). */
    tenantLabels?: boolean;
    /** How long the database-backed gauges are reused between scrapes (default 5 s; 0: every scrape reads). */
    stateIntervalMs?: number;
    /** The Temporal SDK's metrics exporter of this process (worker/temporalRuntime.ts), appended. */
    temporalSdkUrl?: string;
    /** A worker process's metrics listener, whose figures join these (`flightdeck start`). */
    workerUrl?: string;
  };
  version: string;
  transport: TransportPolicy;
  /** The Temporal UI, linked from the rollout board. */
  temporalUi?: { url: string; namespace: string };
}

export interface FlightdeckApp {
  app: Koa<AppState>;
  routes: readonly Route[];
  openapi: Record<string, unknown>;
  /** The app of the metrics listener: /metrics only. */
  metricsApp: Koa<AppState>;
}

export const apiRoutes: readonly Route[] = [
  ...workspaceRoutes,
  ...systemRoutes,
  ...environmentRoutes,
  ...deploymentRoutes,
  ...deploymentPlanRoutes,
  ...versionRoutes,
  ...versionDependencyRoutes,
  ...variableRoutes,
  ...variableSetRoutes,
  ...resourceRoutes,
  ...resourceLookupRoutes,
  ...relationshipRuleRoutes,
  ...runbookRoutes,
  ...resourceProviderRoutes,
  ...jobAgentRoutes,
  ...policyRoutes,
  ...policySkipRoutes,
  ...holdRoutes,
  ...rolloutRoutes,
  ...doraRoutes,
  ...auditEventRoutes,
  ...webhookRoutes,
  ...workspaceSecretRoutes,
  ...releaseTargetStateRoutes,
  ...releaseTargetRoutes,
  ...releaseRoutes,
  ...jobRoutes,
  ...pullRoutes,
  ...githubWebhookRoutes,
];

/** `{name}` (OpenAPI) to `:name` (the router's syntax). */
function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** Requests to routes that read their own (large) body, which the app-wide body parser leaves alone. */
function largeBodyRequests(routes: Route[]): (method: string, path: string) => boolean {
  const patterns = routes
    .filter((route) => route.largeBody && !route.root)
    .flatMap((route) =>
      [route.path, ...route.aliases].flatMap((path) =>
        API_PREFIXES.map((prefix) => ({
          method: route.method.toUpperCase(),
          path: new RegExp(`^${prefix}${path.replace(/\{\w+\}/g, '[^/]+')}/?$`),
        })),
      ),
    );
  return (method, path) => patterns.some((pattern) => pattern.method === method && pattern.path.test(path));
}

function mount(router: Router<AppState>, route: Route, deps: AppDeps): void {
  const readBody = route.largeBody && jsonBody(route.largeBody.limit, route.largeBody.maxNodes);
  for (const path of [route.path, ...route.aliases]) {
    router[route.method](routerPath(path), async (ctx) => {
      if (route.pull) {
        assertSecureForPull(requestTransport(ctx.req), deps.transport);
      }
      await authenticate(ctx, route.auth, deps.adminToken);
      if (readBody) await readBody(ctx, () => route.run(ctx));
      else await route.run(ctx);
    });
  }
}

export function createApp(deps: AppDeps): FlightdeckApp {
  const routes = [...healthRoutes(deps.readiness), ...apiRoutes];
  if (deps.orm) recordSelectorOverruns(deps.orm);
  const openapi = buildOpenApiDocument(routes, deps.version);
  const httpMetrics = createHttpMetrics();

  const app = new Koa<AppState>();
  app.proxy = true;
  app.silent = true;
  app.use(tracing());
  app.use(requestContext(deps.logger));
  app.use(httpMetrics.middleware);
  app.use(problemMiddleware());
  app.use(async (ctx, next) => {
    ctx.state.origin = { actor: SYSTEM_ACTOR, requestId: ctx.state.requestId };
    ctx.state.stores = deps.stores(ctx.state.origin);
    await next();
  });
  app.use(urlInput());
  const readBody = jsonBody(deps.bodyLimit);
  const readsOwnBody = largeBodyRequests(routes);
  app.use((ctx, next) => (readsOwnBody(ctx.method, ctx.path) ? next() : readBody(ctx, next)));

  const root = new Router<AppState>();
  for (const route of routes.filter((r) => r.root)) mount(root, route, deps);
  const docs = documentationRouter(openapi);
  if (deps.orm) {
    registerStateGauges(
      httpMetrics.registry,
      deps.orm,
      deps.metrics?.stateIntervalMs ?? STATE_READ_INTERVAL_MS,
    );
  }
  const sdkUrl = deps.metrics?.temporalSdkUrl;
  const workerUrl = deps.metrics?.workerUrl;
  const scrape = () =>
    scrapeMetrics({
      metrics: [() => httpMetrics.registry.getMetricsAsJSON(), () => domainEvents.getMetricsAsJSON()],
      texts: sdkUrl ? [() => prometheusText(sdkUrl)] : [],
      processes: workerUrl ? [() => processMetrics(workerUrl, deps.metrics?.token)] : [],
      tenantLabels: deps.metrics?.tenantLabels ?? false,
    });
  const scrapeTokens = [deps.metrics?.token, deps.adminToken].filter((token) => token !== undefined);
  app.use(root.routes()).use(root.allowedMethods({ throw: true }));
  app.use(docs.routes()).use(docs.allowedMethods({ throw: true }));
  const ui = uiRouter({ temporalUi: deps.temporalUi }, deps.transport.trustedProxies);
  app.use(ui.routes()).use(ui.allowedMethods({ throw: true }));
  if (scrapeTokens.length > 0) {
    const behindToken = metricsRouter(scrape, scrapeTokens);
    app.use(behindToken.routes()).use(behindToken.allowedMethods({ throw: true }));
  }
  for (const prefix of API_PREFIXES) {
    const router = new Router<AppState>({ prefix });
    for (const route of routes.filter((r) => !r.root)) mount(router, route, deps);
    app.use(router.routes()).use(router.allowedMethods({ throw: true }));
  }
  return {
    app,
    routes,
    openapi,
    metricsApp: metricsListenerApp(
      deps.logger,
      metricsRouter(scrape, deps.metrics?.token ? scrapeTokens : []),
    ),
  };
}
