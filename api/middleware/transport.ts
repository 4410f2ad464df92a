import { ForbiddenError } from '../../domain/errors';

/**
 * SPEC "Authentication" 4: pull endpoints are served over TLS, because a claim can return secret
 * values. A plain-HTTP request is accepted only when insecure pull is explicitly enabled, from the
 * loopback interface when no forwarding header says it came from further away (a local reverse
 * proxy forwarding plain HTTP), or from a trusted proxy whose chain says the client used HTTPS.
 */
export interface TransportPolicy {
  trustedProxies: readonly string[];
  allowInsecurePull: boolean;
}

export interface RequestTransport {
  encrypted: boolean;
  remoteAddress: string | undefined;
  forwardedProto: string | undefined;
  forwardedFor?: string | undefined;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

function normalize(address: string): string {
  return address.trim().startsWith('::ffff:') ? address.trim().slice(7) : address.trim();
}

function elements(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((element) => element.trim())
    .filter(Boolean);
}

/**
 * Each proxy appends the address it received from to X-Forwarded-For and the scheme it received
 * with to X-Forwarded-Proto, so the chain is read from the right: past every trusted proxy, the
 * scheme recorded for the right-most untrusted hop is the one the client used. Elements further
 * left were written by the client or untrusted hops and prove nothing.
 */
export function isSecureForPull(request: RequestTransport, policy: TransportPolicy): boolean {
  if (request.encrypted || policy.allowInsecurePull) return true;
  const trusted = new Set(policy.trustedProxies.map(normalize));
  const protos = elements(request.forwardedProto);
  const hops = elements(request.forwardedFor);
  const remote = normalize(request.remoteAddress ?? '');
  if (!trusted.has(remote)) return LOOPBACK.test(remote) && protos.length === 0 && hops.length === 0;
  let proto = protos.length - 1;
  let hop = hops.length - 1;
  while (proto > 0 && hop >= 0 && trusted.has(normalize(hops[hop]!))) {
    proto--;
    hop--;
  }
  return protos[proto]?.toLowerCase() === 'https';
}

export function assertSecureForPull(request: RequestTransport, policy: TransportPolicy): void {
  if (!isSecureForPull(request, policy)) {
    throw new ForbiddenError(
      'Pull endpoints need HTTPS: claims can carry secrets. Use https://, or a proxy that terminates TLS and is trusted.',
      'tls_required',
    );
  }
}
