import { ForbiddenError } from '../../domain/errors';

/**
 * SPEC "Authentication" 4: pull endpoints are served over TLS, because a claim can return secret
 * values. A plain-HTTP request is accepted only from the loopback interface, from a trusted proxy
 * that says the client used HTTPS, or when insecure pull is explicitly enabled.
 */
export interface TransportPolicy {
  trustedProxies: readonly string[];
  allowInsecurePull: boolean;
}

export interface RequestTransport {
  encrypted: boolean;
  remoteAddress: string | undefined;
  forwardedProto: string | undefined;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

function normalize(address: string): string {
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

export function isSecureForPull(request: RequestTransport, policy: TransportPolicy): boolean {
  if (request.encrypted || policy.allowInsecurePull) return true;
  const remote = request.remoteAddress ?? '';
  if (LOOPBACK.test(remote)) return true;
  const proxied = policy.trustedProxies.map(normalize).includes(normalize(remote));
  return proxied && request.forwardedProto?.split(',')[0]?.trim().toLowerCase() === 'https';
}

export function assertSecureForPull(request: RequestTransport, policy: TransportPolicy): void {
  if (!isSecureForPull(request, policy)) {
    throw new ForbiddenError(
      'Pull endpoints need HTTPS: claims can carry secrets. Use https://, or a proxy that terminates TLS and is trusted.',
      'tls_required',
    );
  }
}
