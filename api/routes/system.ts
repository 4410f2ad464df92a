import fs from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { problem, PROBLEM_CONTENT_TYPE } from '../middleware/problem';
import { route } from '../route';
import type { AppState } from '../context';
import { z } from '../schemas/zod';

/** A named dependency check for /readyz. */
export type ReadinessChecks = Record<string, () => Promise<void>>;

const ReadinessSchema = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    checks: z.record(z.string(), z.object({ ok: z.boolean(), ms: z.number(), error: z.string().optional() })),
  })
  .openapi('Readiness');

export function healthRoutes(checks: ReadinessChecks) {
  return [
    route({
      method: 'get',
      path: '/healthz',
      root: true,
      summary: 'Liveness: the process serves HTTP',
      tags: ['System'],
      auth: 'none',
      responses: { 200: { description: 'Alive', schema: z.object({ status: z.literal('ok') }) } },
      async handle() {
        return { status: 200, body: { status: 'ok' } };
      },
    }),
    route({
      method: 'get',
      path: '/readyz',
      root: true,
      summary: 'Readiness: PostgreSQL and Temporal answer',
      tags: ['System'],
      auth: 'none',
      responses: {
        200: { description: 'Ready', schema: ReadinessSchema },
        503: { description: 'A dependency does not answer', schema: ReadinessSchema },
      },
      async handle() {
        const results = await Promise.all(
          Object.entries(checks).map(async ([name, check]) => {
            const started = Date.now();
            try {
              await withTimeout(check(), 3000);
              return [name, { ok: true, ms: Date.now() - started }] as const;
            } catch (error) {
              return [
                name,
                { ok: false, ms: Date.now() - started, error: (error as Error).message },
              ] as const;
            }
          }),
        );
        const ok = results.every(([, result]) => result.ok);
        return {
          status: ok ? 200 : 503,
          body: { status: ok ? 'ok' : 'unavailable', checks: Object.fromEntries(results) },
        };
      },
    }),
  ];
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const SWAGGER_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Flightdeck API</title>
  <link rel="icon" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true });\n`;

/**
 * Swagger UI's asset directory. Only its path: the package's main module loads the whole UI bundle
 * for browsers into the process (10 MB of the API's heap, for files it only ever streams).
 */
function swaggerUiAssets(): string {
  return path.dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** /openapi.json and the docs page, whose assets are served from the local package. */
export function documentationRouter(openapi: Record<string, unknown>): Router<AppState> {
  const router = new Router<AppState>();
  const assetDir = swaggerUiAssets();
  router.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.body = DOCS_INIT;
  });
  router.get('/docs/:asset', (ctx) => {
    const type = SWAGGER_ASSETS[ctx.params.asset ?? ''];
    if (!type) {
      ctx.status = 404;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = problem(404, 'not_found', `No such documentation asset`);
      return;
    }
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = fs.createReadStream(path.join(assetDir, ctx.params.asset!));
  });
  return router;
}
