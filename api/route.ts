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

/**
 * The top-level keys a body schema declares, through wrappers, pipes and unions of objects; null
 * when any key goes (a record, an object with a catch-all, a non-object).
 */
function declaredKeys(schema: ZodType): Set<string> | null {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  switch (def.type) {
    case 'object': {
      const catchall = def.catchall as ZodType | undefined;
      if (catchall && (catchall as unknown as { _zod: { def: { type: string } } })._zod.def.type !== 'never')
        return null;
      return new Set(Object.keys(def.shape as object));
    }
    case 'pipe':
      return declaredKeys(def.in as ZodType);
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
    case 'readonly':
      return declaredKeys(def.innerType as ZodType);
    case 'union': {
      const keys = new Set<string>();
      for (const option of def.options as ZodType[]) {
        const declared = declaredKeys(option);
        if (!declared) return null;
        for (const key of declared) keys.add(key);
      }
      return keys;
    }
    default:
      return null;
  }
}

/** A body key no schema field names is refused (400), rather than silently dropped. */
function refuseUnknownKeys(schema: ZodType, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
  const declared = declaredKeys(schema);
  if (!declared) return;
  const unknown = Object.keys(value).filter((key) => !declared.has(key));
  if (unknown.length > 0) {
    throw new ValidationError(
      'The request body has fields this endpoint does not take',
      unknown.map((key) => ({ path: formatPath('body', [key]), message: 'unknown field' })),
    );
  }
}

function parse(schema: ZodType | undefined, value: unknown, location: 'path' | 'query' | 'body'): never {
  if (!schema) return undefined as never;
  if (location === 'body') refuseUnknownKeys(schema, value);
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
