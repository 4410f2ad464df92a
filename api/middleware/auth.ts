import { createHash, timingSafeEqual } from 'node:crypto';
import { ForbiddenError, UnauthenticatedError } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import type { AppContext, AuthKind } from '../route';

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

/** `/metrics` behind `FLIGHTDECK_METRICS_TOKEN`: `Authorization: Bearer <token>`, else 401. */
export function assertMetricsToken(ctx: AppContext, token: string): void {
  const presented = bearerToken(ctx);
  if (!presented || !sameSecret(presented, token)) {
    throw new UnauthenticatedError('/metrics needs the metrics token, sent as Authorization: Bearer');
  }
}
