import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import { type z, type ZodObject, type ZodType } from 'zod';
import type { Stores } from '../db/stores';
import { NotFoundError, ValidationError, type FieldIssue } from '../domain/errors';
import type { Principal } from '../domain/principal';

/**
 * One declaration per endpoint: the zod schemas validate the request and generate the OpenAPI
 * document, so the two can never drift apart. Handlers receive parsed input and return a status
 * and a body; they hold no business rules.
 */

export interface AppState {
  requestId: string;
  log: Logger;
  stores: Stores;
  principal?: Principal;
}

export type AppContext = ParameterizedContext<AppState>;

export type AuthKind = 'none' | 'apiKey' | 'admin';

export interface HandlerResult {
  status: number;
  body?: unknown;
}

export interface ResponseSpec {
  description: string;
  schema?: ZodType;
}

type AnyObject = ZodObject;
type Empty = ZodObject<Record<string, never>>;

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends ZodType> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI-style path relative to the version prefix, e.g. `/workspaces/{workspaceId}`. */
  path: string;
  /** Further spellings of the same endpoint (Ctrlplane's aliases); served, not documented twice. */
  aliases?: string[];
  /** Served at the root (`/healthz`) instead of under `/v1` and `/api/v1`. */
  root?: boolean;
  /**
   * A pull-agent endpoint: it needs HTTPS (SPEC "Authentication" 4), and it is the only kind of
   * route a key scoped to one job agent may call.
   */
  pull?: boolean;
  summary: string;
  description?: string;
  tags: string[];
  auth: AuthKind;
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, ResponseSpec>;
  handle: (
    ctx: AppContext,
    input: { params: z.output<P>; query: z.output<Q>; body: z.output<B> },
  ) => Promise<HandlerResult>;
}

export interface Route {
  method: RouteSpec<AnyObject, AnyObject, ZodType>['method'];
  path: string;
  aliases: string[];
  root: boolean;
  pull: boolean;
  summary: string;
  description?: string;
  tags: string[];
  auth: AuthKind;
  params?: AnyObject;
  query?: AnyObject;
  body?: ZodType;
  responses: Record<number, ResponseSpec>;
  /** Validates the request, checks workspace scope, runs the handler and writes the response. */
  run(ctx: AppContext): Promise<void>;
}

export function route<
  P extends AnyObject = Empty,
  Q extends AnyObject = Empty,
  B extends ZodType = ZodType<undefined>,
>(spec: RouteSpec<P, Q, B>): Route {
  return {
    method: spec.method,
    path: spec.path,
    aliases: spec.aliases ?? [],
    root: spec.root ?? false,
    pull: spec.pull ?? false,
    summary: spec.summary,
    description: spec.description,
    tags: spec.tags,
    auth: spec.auth,
    params: spec.params,
    query: spec.query,
    body: spec.body,
    responses: spec.responses,
    async run(ctx) {
      const params = parse(spec.params, ctx.params, 'path');
      const query = parse(spec.query, ctx.query, 'query');
      const body = parse(spec.body, ctx.request.body, 'body');
      assertWorkspaceScope(ctx.state.principal, params);
      const result = await spec.handle(ctx, { params, query, body } as never);
      ctx.status = result.status;
      if (result.body !== undefined) ctx.body = result.body;
    },
  };
}

function parse(schema: ZodType | undefined, value: unknown, location: 'path' | 'query' | 'body'): never {
  if (!schema) return undefined as never;
  const result = schema.safeParse(value ?? (location === 'body' ? undefined : {}));
  if (result.success) return result.data as never;
  throw new ValidationError(`The request ${location} is invalid`, toFieldIssues(result.error, location));
}

export function toFieldIssues(error: z.ZodError, root: string): FieldIssue[] {
  return error.issues.map((issue) => ({ path: formatPath(root, issue.path), message: issue.message }));
}

export function formatPath(root: string, segments: readonly PropertyKey[]): string {
  let out = root;
  for (const segment of segments) {
    out += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`;
  }
  return out;
}

/** A key sees only its own workspace; any other workspace id answers 404, as if it did not exist. */
function assertWorkspaceScope(principal: Principal | undefined, params: unknown): void {
  const workspaceId = (params as { workspaceId?: unknown } | undefined)?.workspaceId;
  if (typeof workspaceId !== 'string' || principal?.kind !== 'apiKey') return;
  if (principal.workspaceId !== workspaceId) throw new NotFoundError('workspace', workspaceId);
}

/** The caller's workspace, for paths that do not name it (PATCH /v1/resources/{id}, a slug). */
export function callerWorkspace(ctx: AppContext): string {
  const principal = ctx.state.principal;
  if (principal?.kind !== 'apiKey') throw new Error('an API key route ran without an API key principal');
  return principal.workspaceId;
}
