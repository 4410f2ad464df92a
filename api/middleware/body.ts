import { bodyParser } from '@koa/bodyparser';
import type { Middleware } from 'koa';
import compose from 'koa-compose';
import { ValidationError } from '../../domain/errors';
import { jsonInputIssues } from '../../domain/jsonInput';
import type { AppState } from '../context';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/**
 * JSON in, nothing else: a request that carries a body must say `application/json` (415
 * otherwise), the body may not exceed the configured limit (413), and its values must be storable
 * and bounded in depth and count (400, domain/jsonInput.ts).
 */
export function jsonBody(limit: string, maxNodes?: number): Middleware<AppState> {
  const requireJson: Middleware<AppState> = async (ctx, next) => {
    if (METHODS_WITH_BODY.has(ctx.method) && ctx.request.length !== 0 && hasBody(ctx.req.headers)) {
      if (!ctx.is('application/json', 'application/*+json')) {
        ctx.throw(415, 'Request bodies must be JSON, sent with Content-Type: application/json');
      }
    }
    await next();
  };
  const parse = bodyParser({
    enableTypes: ['json'],
    encoding: 'utf-8',
    jsonLimit: limit,
    jsonStrict: true,
    onError: (error, ctx) => {
      const status = (error as { status?: number }).status;
      if (status === 413) ctx.throw(413, `The request body exceeds the limit of ${limit}`);
      ctx.throw(400, `The request body is not valid JSON: ${error.message}`);
    },
  }) as unknown as Middleware<AppState>;
  const inspect: Middleware<AppState> = async (ctx, next) => {
    const issues = jsonInputIssues((ctx.request as { body?: unknown }).body, maxNodes);
    if (issues.length > 0) throw new ValidationError('The request body is malformed', issues);
    await next();
  };
  return compose([requireJson, parse, inspect]);
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}
