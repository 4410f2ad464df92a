import type { Middleware } from 'koa';
import { ValidationError, type FieldIssue } from '../../domain/errors';
import { textProblem } from '../../domain/jsonInput';
import type { AppState } from '../context';

/**
 * The request target as text we can store and compare: every percent-encoded part of the path and
 * query must decode to UTF-8 without NUL. The router and the query parser would otherwise pass
 * undecodable parts through raw or with replacement characters, so `%E0%A4%A` or `%ED%A0%80`
 * would name a record other than the one the caller wrote.
 */
export function urlInput(): Middleware<AppState> {
  return async (ctx, next) => {
    const issues = [
      ...partIssues('path', ctx.path.split('/')),
      ...partIssues('query', queryParts(ctx.querystring)),
    ];
    if (issues.length > 0) throw new ValidationError('The request URL is malformed', issues);
    await next();
  };
}

function queryParts(querystring: string): string[] {
  return querystring
    .split('&')
    .flatMap((pair) => pair.split('='))
    .map((part) => part.replace(/\+/g, ' '));
}

function partIssues(where: 'path' | 'query', parts: string[]): FieldIssue[] {
  for (const part of parts) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(part);
    } catch {
      return [{ path: where, message: 'holds percent-encoding that is not UTF-8' }];
    }
    const problem = textProblem(decoded);
    if (problem) return [{ path: where, message: problem }];
  }
  return [];
}
