import { createHash, timingSafeEqual } from 'node:crypto';
import { ForbiddenError, NotFoundError, UnauthenticatedError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { AppContext, AuthKind } from '../context';

/** The token of `Authorization: Bearer <token>`, if the request sends one. */
function bearerToken(ctx: AppContext): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
}

/** The credential a request carries: `x-api-key`, or `Authorization: Bearer`. */
export function presentedCredential(ctx: AppContext): string | undefined {
  const apiKey = ctx.get('x-api-key').trim();
  if (apiKey) return apiKey;
  return bearerToken(ctx);
}

function sameSecret(a: string, b: string): boolean {
  // Hash first so the comparison takes the same time whatever the lengths.
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** Establishes who is calling, for the kind of authentication a route asks for. */
export async function authenticate(
  ctx: AppContext,
  kind: AuthKind,
  adminToken: string | undefined,
): Promise<void> {
  if (kind === 'none') return;
  const credential = presentedCredential(ctx);
  if (!credential) {
    throw new UnauthenticatedError(
      'This endpoint needs an API key, sent as x-api-key or Authorization: Bearer',
    );
  }
  let principal: Principal | undefined;
  if (kind === 'admin') {
    if (!adminToken) throw new ForbiddenError('The admin API is disabled: FLIGHTDECK_ADMIN_TOKEN is not set');
    if (sameSecret(credential, adminToken)) principal = { kind: 'admin' };
  } else {
    principal = await ctx.state.stores.apiKeys.authenticate(credential);
  }
  if (!principal) throw new UnauthenticatedError('The credential is not valid');
  ctx.state.principal = principal;
}

/** What a request reaches: a pull endpoint or not, and the workspace its path names, if any. */
export interface Access {
  pull: boolean;
  workspaceId?: string;
}

/**
 * The one authorization of a workspace key, for the API and the rollout board alike: a key scoped
 * to one job agent may only use pull endpoints (403 `agent_scope`), and a key sees only its own
 * workspace (another workspace's id answers 404, as if it did not exist).
 */
export function authorize(principal: Principal | undefined, access: Access): void {
  if (principal?.kind !== 'apiKey') return;
  if (principal.jobAgentId && !access.pull) {
    throw new ForbiddenError(
      'This key is scoped to one job agent: it may only poll, claim and report its jobs',
      'agent_scope',
    );
  }
  if (access.workspaceId !== undefined && principal.workspaceId !== access.workspaceId) {
    throw new NotFoundError('workspace', access.workspaceId);
  }
}

/** `/metrics` behind a token: `Authorization: Bearer` one of `tokens`, else 401. */
export function assertMetricsToken(ctx: AppContext, tokens: readonly string[]): void {
  const presented = bearerToken(ctx);
  if (!presented || !tokens.some((token) => sameSecret(presented, token))) {
    throw new UnauthenticatedError('/metrics needs the metrics token, sent as Authorization: Bearer');
  }
}
