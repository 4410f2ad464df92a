import Router from '@koa/router';
import { z } from 'zod';
import { NotFoundError, UnauthenticatedError, ValidationError } from '../../domain/errors';
import type { ApiKeyPrincipal, Principal } from '../../domain/principal';
import { isUuid } from '../../domain/uuid';
import { authorize } from '../middleware/auth';
import { sameOriginWrites } from '../middleware/sameOrigin';
import { clientUsedTls, requestTransport } from '../middleware/transport';
import { audited, toFieldIssues, type AuditedWrite, type HandlerResult } from '../route';
import type { AppContext, AppState } from '../context';
import { Slug } from '../schemas/common';
import { toJob } from '../schemas/job';
import { toJobAgent } from '../schemas/jobAgent';
import type { BoardJson, DeploymentPageJson } from '../../domain/boardJson';
import { BOARD_PAGE, BOARD_STYLE } from '../ui/boardPage';
import { boardScript } from '../ui/boardScript';
import { HoldBody, toHold } from '../schemas/hold';
import { PolicySkipBody, toPolicySkip } from '../schemas/policySkip';
import { ApprovalBody, toApproval } from '../schemas/release';
import { toAuditEvent } from '../schemas/auditEvent';

/**
 * The cookie that keeps the board's session id (application/boardSessions.ts), never the key: sent
 * back only to /ui, never readable by scripts.
 */
const COOKIE = 'flightdeck_session';

const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

export interface BoardLinks {
  /** The Temporal UI, for links to releases' workflows. */
  temporalUi?: { url: string; namespace: string };
}

/** Values a filter may list, at most. */
const FILTER_VALUES = 100;

/** One filter: a value, or the same parameter repeated (any of them); absent for all. */
const filterValues = (one: z.ZodString) =>
  z
    .union([one, z.array(one).max(FILTER_VALUES)])
    .transform((value) => (Array.isArray(value) ? value : [value]))
    .optional();

/** The board's approve action: the release whose version is approved in its environment. */
const BoardApproval = z.strictObject({ releaseId: z.uuid(), reason: ApprovalBody.shape.reason });

/** board.json's query: the page's URL carries the same parameters. */
const BoardQuery = z.strictObject({
  system: filterValues(Slug),
  deployment: filterValues(Slug),
  environment: filterValues(z.string().min(1).max(200)),
  q: z.string().trim().max(100).optional(),
});

/** The board's filters from a query string; 400 (problem+json) for anything else. */
function boardFilter(query: unknown) {
  const parsed = BoardQuery.safeParse(query);
  if (!parsed.success) {
    throw new ValidationError('The board query is invalid', toFieldIssues(parsed.error, 'query'));
  }
  const { system, deployment, environment, q } = parsed.data;
  return {
    systems: system ?? [],
    deployments: deployment ?? [],
    environments: environment ?? [],
    search: q || undefined,
  };
}

/** The links the board's pages draw: to a job, an agent and a release's workflow. */
function boardLinks(links: BoardLinks) {
  const ui = links.temporalUi;
  return {
    job: '/ui/jobs/{jobId}',
    agent: '/ui/job-agents/{jobAgentId}',
    deployment: '/ui/deployments/{slug}',
    releaseWorkflow: ui
      ? `${ui.url.replace(/\/$/, '')}/namespaces/${encodeURIComponent(ui.namespace)}/workflows/release%2F{releaseId}`
      : null,
  };
}

/** A path id the board links to; anything else is not found. */
function idParam(ctx: AppContext, name: string, kind: string): string {
  const id = ctx.params[name] ?? '';
  if (!isUuid(id)) throw new NotFoundError(kind, id.slice(0, 100));
  return id;
}

/** A board action: run as the signed-in key and audited as the API write it stands for. */
async function boardAction(
  ctx: AppContext,
  principal: Principal,
  write: AuditedWrite,
  params: Record<string, string>,
  body: unknown,
  run: () => Promise<HandlerResult>,
): Promise<void> {
  const result = await audited(ctx, principal, write, { params, body }, run);
  ctx.status = result.status;
  ctx.body = result.body;
}

/**
 * The board's key, authorized as the API authorizes its routes: the board is not a pull endpoint,
 * so a key scoped to one job agent is refused (403 `agent_scope`).
 */
function boardKey(principal: Principal | undefined, refusal: string): ApiKeyPrincipal {
  if (principal?.kind !== 'apiKey') throw new UnauthenticatedError(refusal);
  authorize(principal, { pull: false, workspaceId: principal.workspaceId });
  return principal;
}

/**
 * Sets the board's cookie (cleared by an empty value that expired long ago), `Secure` when the
 * client used TLS as read through the trusted proxies: Koa's own `ctx.secure` believes
 * X-Forwarded-Proto from any peer.
 */
function setSessionCookie(
  ctx: AppContext,
  trustedProxies: readonly string[],
  value: string,
  expires: Date,
): void {
  const tls = clientUsedTls(requestTransport(ctx.req), trustedProxies);
  // The cookie jar refuses a Secure cookie over a plain connection unless told the client used TLS.
  ctx.cookies.secure = tls;
  ctx.cookies.set(COOKIE, value, {
    httpOnly: true,
    sameSite: 'strict',
    secure: tls,
    path: '/ui',
    expires,
    overwrite: true,
  });
}

/** The workspace of the board's cookie; 401 without a valid one, 403 for an agent's key. */
async function signedIn(ctx: AppContext): Promise<string> {
  return (await signedInAs(ctx)).workspaceId;
}

/**
 * The workspace of the board's cookie and the key that acts through it (the board's actions are the
 * key's): the session's key, authorized afresh on every request.
 */
async function signedInAs(ctx: AppContext): Promise<{ workspaceId: string; principal: Principal }> {
  const sessionId = ctx.cookies.get(COOKIE);
  const principal = sessionId ? await ctx.state.stores.boardSessions.resolve(sessionId) : undefined;
  const key = boardKey(principal, 'Sign in to the board with an API key');
  return { workspaceId: key.workspaceId, principal: key };
}

/** A board action's body, as the API's route for it validates it; 400 (problem+json) otherwise. */
function actionBody<T extends z.ZodType>(schema: T, ctx: AppContext): z.infer<T> {
  const parsed = schema.safeParse((ctx.request as { body?: unknown }).body ?? {});
  if (!parsed.success)
    throw new ValidationError('The action is invalid', toFieldIssues(parsed.error, 'body'));
  return parsed.data;
}

/** The window of the delivery figures and chart on a deployment's page. */
const BOARD_DORA_DAYS = 30;
/** Audit events a deployment's page shows in its timeline, newest first. */
const BOARD_TIMELINE_EVENTS = 30;

/** Unexpired holds, and skips still counting, shown at most. */
const LEVERS_SHOWN = 100;

/** The levers in force in the workspace: holds and skips, each with who, why and until when. */
async function boardLevers(ctx: AppContext, workspaceId: string) {
  const page = { limit: LEVERS_SHOWN, offset: 0 };
  const [holds, skips] = await Promise.all([
    ctx.state.stores.holds.list(workspaceId, { active: true }, page),
    ctx.state.stores.policySkips.list(workspaceId, { active: true }, page),
  ]);
  return {
    holds: holds.items.map((hold) => toHold(hold)),
    skips: skips.items.map((skip) => toPolicySkip(skip)),
  };
}

/**
 * The rollout board (`/ui`): a page of our own that signs in with a workspace API key (not a key
 * scoped to one job agent), opening a server-side session whose id is kept in an HttpOnly,
 * SameSite=Strict cookie scoped to /ui (`Secure` when the client used TLS, as read through
 * `trustedProxies`), and reads the board as JSON through it. The cookie authenticates /ui paths
 * only; the API itself never reads it. Its writes (sign-in, sign-out, actions) come from its own
 * pages only.
 */
export function uiRouter(links: BoardLinks, trustedProxies: readonly string[]): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/ui' });
  router.use(sameOriginWrites(trustedProxies));
  const asset = (path: string, type: string, body: string) =>
    router.get(path, (ctx) => {
      ctx.set(SECURITY_HEADERS);
      ctx.type = type;
      ctx.body = body;
    });
  asset('/', 'text/html; charset=utf-8', BOARD_PAGE);
  asset('/board.css', 'text/css; charset=utf-8', BOARD_STYLE);
  // A deployment's page: the same page, whose script reads the deployment's board.
  asset('/deployments/:slug', 'text/html; charset=utf-8', BOARD_PAGE);
  router.get('/board.js', async (ctx) => {
    const script = await boardScript();
    ctx.set(SECURITY_HEADERS);
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = script;
  });

  router.post('/session', async (ctx) => {
    const apiKey = (ctx.request as { body?: { apiKey?: unknown } }).body?.apiKey;
    const principal =
      typeof apiKey === 'string' && apiKey.length <= 512
        ? await ctx.state.stores.apiKeys.authenticate(apiKey)
        : undefined;
    const session = await ctx.state.stores.boardSessions.open(
      boardKey(principal, 'That API key is not valid'),
    );
    setSessionCookie(ctx, trustedProxies, session.sessionId, session.expiresAt);
    ctx.status = 204;
  });
  router.delete('/session', async (ctx) => {
    const sessionId = ctx.cookies.get(COOKIE);
    if (sessionId) await ctx.state.stores.boardSessions.end(sessionId);
    setSessionCookie(ctx, trustedProxies, '', new Date(0));
    ctx.status = 204;
  });

  boardReads(router, links);
  boardActions(router);
  return router;
}

/** The board's reads, as JSON through the session: the workspace's board and a deployment's page. */
function boardReads(router: Router<AppState>, links: BoardLinks): void {
  router.get('/board.json', async (ctx) => {
    const workspaceId = await signedIn(ctx);
    const board = await ctx.state.stores.rolloutBoard.board(workspaceId, boardFilter(ctx.query));
    ctx.set(SECURITY_HEADERS);
    ctx.body = {
      workspaceId,
      ...board,
      levers: await boardLevers(ctx, workspaceId),
      links: boardLinks(links),
    } satisfies BoardJson;
  });
  router.get('/deployments/:slug/board.json', async (ctx) => {
    const workspaceId = await signedIn(ctx);
    const slug = Slug.safeParse(ctx.params.slug);
    if (!slug.success) throw new NotFoundError('deployment', (ctx.params.slug ?? '').slice(0, 100));
    const page = await ctx.state.stores.rolloutBoard.deployment(workspaceId, slug.data);
    const dora = await ctx.state.stores.dora.report(workspaceId, page.deployment.id, BOARD_DORA_DAYS);
    const timeline = await ctx.state.stores.audit.timeline(
      workspaceId,
      page.deployment.id,
      BOARD_TIMELINE_EVENTS,
    );
    ctx.set(SECURITY_HEADERS);
    ctx.body = {
      workspaceId,
      ...page,
      dora,
      timeline: timeline.map(toAuditEvent),
      levers: await boardLevers(ctx, workspaceId),
      links: boardLinks(links),
    } satisfies DeploymentPageJson;
  });
}

/**
 * The board's actions: the API's own operations, as the signed-in key, validated as the API
 * validates them, each audited as the API operation it stands for; and the records it opens.
 */
function boardActions(router: Router<AppState>): void {
  router.post('/actions/approve', async (ctx) => {
    const { workspaceId, principal } = await signedInAs(ctx);
    const { releaseId, reason } = actionBody(BoardApproval, ctx);
    const write = { method: 'post', path: '/workspaces/{workspaceId}/releases/{releaseId}/approve' };
    await boardAction(ctx, principal, write, { workspaceId, releaseId }, { reason }, async () => ({
      status: 201,
      body: toApproval(
        await ctx.state.stores.releases.approve(workspaceId, releaseId, principal, {
          status: 'approved',
          reason,
        }),
      ),
    }));
  });
  router.post('/actions/skips', async (ctx) => {
    const { workspaceId, principal } = await signedInAs(ctx);
    const body = actionBody(PolicySkipBody, ctx);
    const write = { method: 'post', path: '/workspaces/{workspaceId}/policy-skips' };
    await boardAction(ctx, principal, write, { workspaceId }, body, async () => ({
      status: 201,
      body: toPolicySkip(await ctx.state.stores.policySkips.create(workspaceId, principal, body)),
    }));
  });
  router.post('/actions/holds', async (ctx) => {
    const { workspaceId, principal } = await signedInAs(ctx);
    const body = actionBody(HoldBody, ctx);
    const write = { method: 'post', path: '/workspaces/{workspaceId}/holds' };
    await boardAction(ctx, principal, write, { workspaceId }, body, async () => ({
      status: 201,
      body: toHold(await ctx.state.stores.holds.create(workspaceId, principal, body)),
    }));
  });
  router.delete('/actions/holds/:holdId', async (ctx) => {
    const { workspaceId, principal } = await signedInAs(ctx);
    const holdId = idParam(ctx, 'holdId', 'hold');
    const write = { method: 'delete', path: '/workspaces/{workspaceId}/holds/{holdId}' };
    await boardAction(ctx, principal, write, { workspaceId, holdId }, undefined, async () => ({
      status: 200,
      body: toHold(await ctx.state.stores.holds.delete(workspaceId, holdId)),
    }));
  });
  router.get('/jobs/:jobId', async (ctx) => {
    const workspaceId = await signedIn(ctx);
    ctx.set(SECURITY_HEADERS);
    ctx.body = toJob(await ctx.state.stores.jobs.get(workspaceId, idParam(ctx, 'jobId', 'job')));
  });
  router.get('/job-agents/:jobAgentId', async (ctx) => {
    const workspaceId = await signedIn(ctx);
    ctx.set(SECURITY_HEADERS);
    ctx.body = toJobAgent(
      await ctx.state.stores.jobAgents.get(workspaceId, idParam(ctx, 'jobAgentId', 'job agent')),
    );
  });
}
