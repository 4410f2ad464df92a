import { OpenAPIRegistry, OpenApiGeneratorV31, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import type { Route } from './route';
import { ProblemSchema } from './schemas/common';

export const API_PREFIXES = ['/v1', '/api/v1'] as const;

function problemResponse(description: string): ResponseConfig {
  return { description, content: { 'application/problem+json': { schema: ProblemSchema } } };
}

/**
 * The OpenAPI 3.1 document, generated from the same route declarations and zod schemas that
 * validate requests. Routes are documented under `/v1`; every one is also served under `/api/v1`.
 */
export function buildOpenApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
  });
  registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'The same API key, sent as Authorization: Bearer <key>',
  });
  registry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token (FLIGHTDECK_ADMIN_TOKEN)',
  });

  for (const route of routes) {
    const responses: Record<string, ResponseConfig> = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      responses[status] = spec.schema
        ? { description: spec.description, content: { 'application/json': { schema: spec.schema } } }
        : { description: spec.description };
    }
    const hasInput = Boolean(route.params || route.query || route.body);
    if (hasInput) responses['400'] ??= problemResponse('The request is malformed or invalid');
    if (route.auth !== 'none') responses['401'] ??= problemResponse('Missing or invalid credentials');
    if (route.params) responses['404'] ??= problemResponse('Not found in this workspace');
    if (route.body) {
      responses['413'] ??= problemResponse('The body exceeds the size limit');
      responses['415'] ??= problemResponse('The body is not JSON');
    }
    const security: Record<string, string[]>[] =
      route.auth === 'apiKey'
        ? [{ apiKey: [] }, { bearer: [] }]
        : route.auth === 'admin'
          ? [{ adminToken: [] }]
          : [];
    registry.registerPath({
      method: route.method,
      path: route.root ? route.path : `${API_PREFIXES[0]}${route.path}`,
      summary: route.summary,
      description: route.description,
      tags: route.tags,
      security,
      request: {
        params: route.params,
        query: route.query,
        body: route.body
          ? { required: true, content: { 'application/json': { schema: route.body } } }
          : undefined,
      },
      responses,
    });
  }

  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Flightdeck API',
      version,
      description:
        'Deployment orchestration: deployments, versions, environments, resources, releases, jobs and job agents. ' +
        'Every path under /v1 is also served under /api/v1. Errors are RFC 9457 problem+json.',
    },
    servers: [{ url: '/' }],
  }) as unknown as Record<string, unknown>;
}
