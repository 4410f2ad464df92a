import { type z, type ZodObject, type ZodType } from 'zod';
import type { Principal } from '../domain/principal';
import { ValidationError, type FieldIssue } from '../domain/errors';
import { authorize } from './middleware/auth';
import { strictBody } from './strictBody';
import { isPageBody, pageJson } from './pageJson';
import { actorOf, describeWrite, type AuditEventInput, type WriteAudit } from '../domain/audit';
import type { WriteOutcome } from '../db/audit';
import type { AppContext, AuthKind } from './context';

/**
 * One declaration per endpoint: the zod schemas validate the request and generate the OpenAPI
 * document, so the two can never drift apart. Handlers receive parsed input and return a status
 * and a body; they hold no business rules.
 */

export interface HandlerResult {
  status: number;
  body?: unknown;
  /** Whether the write created its record, for its audit event, where its answer does not say. */
  created?: boolean;
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
   * A pull-agent endpoint: it needs HTTPS (docs/behaviour.md "Authentication"), and it is the only kind of
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
  /**
   * A bulk body beyond the configured body limit: read after authentication (not before, as other
   * bodies are), with its own limits in bytes and JSON values.
   */
  largeBody?: LargeBody;
  /**
   * A write's audit event (domain/audit.ts `describeWrite`), named by its path unless given here;
   * false for a POST that only reads, and for writes whose event the engine records itself (a
   * claim, a status report: each with what it changed).
   */
  audit?: false | WriteAudit;
  responses: Record<number, ResponseSpec>;
  handle: (
    ctx: AppContext,
    input: { params: z.output<P>; query: z.output<Q>; body: z.output<B> },
  ) => Promise<HandlerResult>;
}

export interface LargeBody {
  /** Bytes, as `FLIGHTDECK_BODY_LIMIT` spells them (`64mb`). */
  limit: string;
  maxNodes: number;
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
  largeBody?: LargeBody;
  responses: Record<number, ResponseSpec>;
  /** Validates the request, authorizes it (api/middleware/auth.ts), runs the handler and writes the response. */
  run(ctx: AppContext): Promise<void>;
}

export function route<
  P extends AnyObject = Empty,
  Q extends AnyObject = Empty,
  B extends ZodType = ZodType<undefined>,
>(spec: RouteSpec<P, Q, B>): Route {
  const strictSpecBody = spec.body && strictBody(spec.body);
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
    largeBody: spec.largeBody,
    responses: spec.responses,
    async run(ctx) {
      const params = parse(spec.params, ctx.params, 'path');
      authorize(ctx.state.principal, {
        pull: spec.pull ?? false,
        workspaceId: (params as { workspaceId?: string } | undefined)?.workspaceId,
      });
      const query = parse(spec.query, ctx.query, 'query');
      const body = parse(strictSpecBody, ctx.request.body, 'body');
      const principal = ctx.state.principal;
      const handle = () => spec.handle(ctx, { params, query, body } as never);
      // The audit names the fields the caller sent, not the defaults validation filled in.
      const sent = ctx.request.body;
      const result = principal
        ? await audited(ctx, principal, spec, { params, body: sent }, handle)
        : await handle();
      ctx.status = result.status;
      if (isPageBody(result.body)) {
        ctx.type = 'application/json';
        ctx.body = await pageJson(result.body);
      } else if (result.body !== undefined) ctx.body = result.body;
    },
  };
}

/** A write as the audit trail names it: the API route it is, or the one a board action stands for. */
export interface AuditedWrite {
  method: string;
  path: string;
  audit?: false | WriteAudit;
}

/**
 * Runs a request's handler as its caller (the events its stores record on the way are the caller's)
 * and, for a write that succeeded, records the write's own event: its store did so in the write's
 * transaction when it could (db/audit.ts `recordWriteEvent`), else it is written here, after.
 */
export async function audited(
  ctx: AppContext,
  principal: Principal,
  write: AuditedWrite,
  input: { params: unknown; body: unknown },
  handle: () => Promise<HandlerResult>,
): Promise<HandlerResult> {
  const origin = ctx.state.origin;
  origin.actor = actorOf(principal);
  const writes = write.method !== 'get' && write.audit !== false;
  const pending = writes
    ? {
        recorded: false,
        describe: (outcome: WriteOutcome) =>
          writeEvent(
            write,
            { ...input, response: outcome.id ? { id: outcome.id } : undefined, created: outcome.created },
            principal,
          ),
      }
    : undefined;
  origin.write = pending;
  const result = await handle();
  origin.write = undefined;
  if (pending && !pending.recorded && result.status < 400) {
    const event = writeEvent(write, { ...input, response: result.body, created: result.created }, principal);
    if (event) await ctx.state.stores.audit.record([event]);
  }
  return result;
}

/** The audit event of an API write, in the workspace it wrote to (a new workspace: the answer's). */
function writeEvent(
  spec: AuditedWrite,
  write: { params: unknown; body: unknown; response: unknown; created?: boolean },
  principal: Principal,
): AuditEventInput | undefined {
  const params = (write.params ?? {}) as Record<string, unknown>;
  const described = describeWrite({
    method: spec.method,
    path: spec.path,
    params,
    body: write.body,
    response: write.response,
    ...(write.created === undefined ? {} : { created: write.created }),
    audit: spec.audit || undefined,
  });
  const workspaceId =
    (params.workspaceId as string | undefined) ??
    (principal.kind === 'apiKey' ? principal.workspaceId : undefined) ??
    (described.record.type === 'workspace' ? described.record.id : undefined);
  return workspaceId ? { ...described, workspaceId } : undefined;
}

function parse(schema: ZodType | undefined, value: unknown, location: 'path' | 'query' | 'body'): never {
  if (!schema) return undefined as never;
  const result = schema.safeParse(value ?? (location === 'body' ? undefined : {}));
  if (result.success) return result.data as never;
  const issues = toFieldIssues(result.error, location);
  throw new ValidationError(
    issues.every((issue) => issue.message === UNKNOWN_FIELD)
      ? `The request ${location} has fields this endpoint does not take`
      : `The request ${location} is invalid`,
    issues,
  );
}

const UNKNOWN_FIELD = 'unknown field';

type Issue = z.ZodError['issues'][number];

/** One issue per field; a key no schema declares (api/strictBody.ts) is named with its full path. */
export function toFieldIssues(error: z.ZodError, root: string): FieldIssue[] {
  return fieldIssues(error.issues, root, []);
}

function fieldIssues(issues: readonly Issue[], root: string, at: readonly PropertyKey[]): FieldIssue[] {
  return issues.flatMap((issue) => {
    const path = [...at, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: formatPath(root, [...path, key]), message: UNKNOWN_FIELD }));
    }
    const option = issue.code === 'invalid_union' ? meantOption(issue.errors) : undefined;
    if (option) return fieldIssues(option, root, path);
    return [{ path: formatPath(root, path), message: issue.message }];
  });
}

/**
 * The option of a union that took none which the value was evidently meant for: of the options
 * whose type it has, the only one that declares the most of its keys. Its issues say more than
 * "Invalid input" (a misspelled key inside one of two similar objects, say).
 */
function meantOption(options: readonly (readonly Issue[])[]): readonly Issue[] | undefined {
  const atRoot = (option: readonly Issue[]) => option.filter((issue) => issue.path.length === 0);
  const typed = options.filter((option) => !atRoot(option).some((issue) => issue.code === 'invalid_type'));
  const unknownKeys = typed.map((option) =>
    atRoot(option).reduce(
      (count, issue) => count + (issue.code === 'unrecognized_keys' ? issue.keys.length : 0),
      0,
    ),
  );
  const fewest = typed.filter((_, index) => unknownKeys[index] === Math.min(...unknownKeys));
  return fewest.length === 1 ? fewest[0] : undefined;
}

export function formatPath(root: string, segments: readonly PropertyKey[]): string {
  let out = root;
  for (const segment of segments) {
    out += typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`;
  }
  return out;
}

/** The caller's workspace, for paths that do not name it (PATCH /v1/resources/{id}, a slug). */
export function callerWorkspace(ctx: AppContext): string {
  const principal = ctx.state.principal;
  if (principal?.kind !== 'apiKey') throw new Error('an API key route ran without an API key principal');
  return principal.workspaceId;
}
