import type { Middleware } from 'koa';
import {
  ConflictError,
  FlightdeckError,
  ForbiddenError,
  NotFoundError,
  OverBudgetError,
  RateLimitedError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
  type FieldIssue,
} from '../../domain/errors';
import type { AppState } from '../context';

/**
 * The one place where failures become HTTP answers: RFC 9457 problem+json, never a stack trace.
 * Typed domain errors map to their status; HTTP errors raised by Koa and its body parser keep
 * theirs; anything else is a 500 whose details stay in the log, found by the request id.
 */

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** The detail again, where Ctrlplane's clients read an error's text. */
  message: string;
  code: string;
  instance?: string;
  requestId?: string;
  errors?: FieldIssue[];
  /** Ctrlplane's `details` of an error that has them (a workflow's `DUPLICATE_SLUG`: `{slug, existingWorkflowId}`). */
  details?: Record<string, unknown>;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const STATUS_OF = new Map<abstract new (...args: never[]) => FlightdeckError, number>([
  [ValidationError, 400],
  [UnauthenticatedError, 401],
  [ForbiddenError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [OverBudgetError, 422],
  [RateLimitedError, 429],
  [UnavailableError, 503],
]);

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

const CODES: Record<number, string> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  501: 'not_implemented',
  503: 'unavailable',
};

export function problem(
  status: number,
  code: string,
  detail: string,
  errors?: FieldIssue[],
  details?: Record<string, unknown>,
): Problem {
  return {
    type: `urn:flightdeck:problem:${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    message: detail,
    code,
    ...(errors && errors.length > 0 ? { errors } : {}),
    ...(details ? { details } : {}),
  };
}

interface HttpLikeError {
  status?: unknown;
  statusCode?: unknown;
  expose?: unknown;
  message?: unknown;
}

function toProblem(error: unknown): { problem: Problem; unexpected: boolean } {
  if (error instanceof FlightdeckError) {
    // A subclass (a SealedValueError is a ConflictError) answers as the class it refines.
    const status = [...STATUS_OF].find(([kind]) => error instanceof kind)?.[1] ?? 500;
    return {
      problem: problem(status, error.code, error.message, error.issues, error.details),
      unexpected: status >= 500,
    };
  }
  const http = (error ?? {}) as HttpLikeError;
  const status = Number(http.status ?? http.statusCode);
  if (Number.isInteger(status) && status >= 400 && status < 500) {
    const detail =
      http.expose && typeof http.message === 'string' ? http.message : (TITLES[status] ?? 'Request failed');
    return { problem: problem(status, CODES[status] ?? 'request_failed', detail), unexpected: false };
  }
  return {
    problem: problem(
      500,
      'internal_error',
      'The server failed to process the request; see its log for this request id.',
    ),
    unexpected: true,
  };
}

export function problemMiddleware(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw Object.assign(new Error(`No route for ${ctx.method} ${ctx.path}`), {
          status: 404,
          expose: true,
        });
      }
    } catch (error) {
      const { problem: body, unexpected } = toProblem(error);
      if (unexpected) ctx.state.log?.error({ err: error }, 'request failed');
      ctx.status = body.status;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = { ...body, instance: ctx.path, requestId: ctx.state.requestId };
      if (body.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="flightdeck", charset="UTF-8"');
      if (error instanceof RateLimitedError) ctx.set('Retry-After', String(error.retryAfterSeconds));
    }
  };
}
