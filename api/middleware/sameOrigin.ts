import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { ForbiddenError } from '../../domain/errors';
import type { AppState } from '../context';
import { clientUsedTls, requestTransport } from './transport';

/** Methods that change nothing, which any page may send. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** `Sec-Fetch-Site` of a request made by a page of this origin, or by the user (typed, bookmarked). */
const OWN_FETCH_SITES = new Set(['same-origin', 'none']);

/**
 * The origin the client addressed: the scheme it used (TLS as `clientUsedTls` reads it, forwarding
 * headers believed only from trusted proxies) and its `Host` header, as a proxy passes it on (never
 * `X-Forwarded-Host`). Undefined without a usable `Host`.
 */
function addressedOrigin(request: IncomingMessage, trustedProxies: readonly string[]): string | undefined {
  const host = request.headers.host;
  if (!host) return undefined;
  const scheme = clientUsedTls(requestTransport(request), trustedProxies) ? 'https' : 'http';
  const addressed = `${scheme}://${host}`;
  return URL.canParse(addressed) ? new URL(addressed).origin : undefined;
}

/**
 * Refuses a state-changing request another site's page sent (403 `cross_site`): one whose
 * `Sec-Fetch-Site` is neither `same-origin` nor `none`, or whose `Origin` is not the origin it was
 * sent to. A request with neither header (curl, a script) is no browser's, and passes: a browser
 * sends at least `Origin` with every cross-site write.
 */
export function sameOriginWrites(trustedProxies: readonly string[]): Middleware<AppState> {
  return async (ctx, next) => {
    if (!SAFE_METHODS.has(ctx.method)) {
      const fetchSite = ctx.get('sec-fetch-site');
      const origin = ctx.get('origin');
      const crossSite =
        (fetchSite !== '' && !OWN_FETCH_SITES.has(fetchSite)) ||
        (origin !== '' && origin !== addressedOrigin(ctx.req, trustedProxies));
      if (crossSite) {
        throw new ForbiddenError(
          "Board writes are accepted from the board's own pages only: this request came from another site",
          'cross_site',
        );
      }
    }
    await next();
  };
}
