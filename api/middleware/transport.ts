import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { ForbiddenError } from '../../domain/errors';

/**
 * docs/behaviour.md "Authentication": pull endpoints are served over TLS, because a claim can return secret
 * values. A plain-HTTP request is accepted only when insecure pull is explicitly enabled, from the
 * loopback interface when no forwarding header says it came from further away (a local reverse
 * proxy forwarding plain HTTP), or from a trusted proxy whose chain says the client used HTTPS.
 * The rollout board reads the client's scheme the same way, for its cookie's `Secure` flag and its
 * own origin (api/routes/ui.ts).
 */
export interface TransportPolicy {
  trustedProxies: readonly string[];
  allowInsecurePull: boolean;
}

export interface RequestTransport {
  encrypted: boolean;
  remoteAddress: string | undefined;
  headers: IncomingHttpHeaders;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/**
 * Headers a proxy adds when it passes a request on: with any of them, a request from loopback came
 * from further away, through something on this host.
 */
const FORWARDING_HEADERS = /^(forwarded|via|x-real-ip|x-client-ip|true-client-ip|x-forwarded-.+)$/;

function normalize(address: string): string {
  return address.trim().startsWith('::ffff:') ? address.trim().slice(7) : address.trim();
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

function elements(header: string | string[] | undefined): string[] {
  return headerText(header)
    .split(',')
    .map((element) => element.trim())
    .filter(Boolean);
}

/** Splits at `separator` outside quoted strings. */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted && char === '\\') {
      current += char + (text[++i] ?? '');
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (char === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts;
}

/** A `for=` node of RFC 7239 as an address: quotes, brackets and the port removed. */
function forwardedNode(value: string): string {
  const node = value.trim().replace(/^"(.*)"$/, '$1');
  const bracketed = /^\[([^\]]+)\](:\d+)?$/.exec(node);
  if (bracketed) return bracketed[1]!;
  return /^[\d.]+:\d+$/.test(node) ? node.slice(0, node.lastIndexOf(':')) : node;
}

/** The hops of a `Forwarded` header (RFC 7239), left to right: each one's `for` and `proto`. */
function forwardedHops(header: string): { for?: string; proto?: string }[] {
  return splitOutsideQuotes(header, ',')
    .filter((element) => element.trim())
    .map((element) => {
      const hop: { for?: string; proto?: string } = {};
      for (const pair of splitOutsideQuotes(element, ';')) {
        const at = pair.indexOf('=');
        if (at === -1) continue;
        const name = pair.slice(0, at).trim().toLowerCase();
        const value = pair.slice(at + 1).trim();
        if (name === 'for') hop.for = forwardedNode(value);
        if (name === 'proto') hop.proto = value.replace(/^"(.*)"$/, '$1');
      }
      return hop;
    });
}

/**
 * The scheme the client used, by `X-Forwarded-Proto` and `X-Forwarded-For`. Each proxy appends the
 * address it received from to X-Forwarded-For and the scheme it received with to X-Forwarded-Proto,
 * so the chain is read from the right: past every trusted proxy, the scheme recorded for the
 * right-most untrusted hop is the one the client used. Elements further left were written by the
 * client or untrusted hops and prove nothing.
 */
function xForwardedScheme(headers: IncomingHttpHeaders, trusted: Set<string>): string | undefined {
  const protos = elements(headers['x-forwarded-proto']);
  const hops = elements(headers['x-forwarded-for']);
  let proto = protos.length - 1;
  let hop = hops.length - 1;
  while (proto > 0 && hop >= 0 && trusted.has(normalize(hops[hop]!))) {
    proto--;
    hop--;
  }
  return protos[proto]?.toLowerCase();
}

/** The scheme the client used, by `Forwarded`: the same reading, with `for` and `proto` in one element. */
function forwardedScheme(header: string, trusted: Set<string>): string | undefined {
  const hops = forwardedHops(header);
  let hop = hops.length - 1;
  while (hop > 0 && trusted.has(normalize(hops[hop]!.for ?? ''))) hop--;
  return hops[hop]?.proto?.toLowerCase();
}

/** The connection's transport, as the checks below read it. */
export function requestTransport(request: IncomingMessage): RequestTransport {
  return {
    encrypted: Boolean((request.socket as { encrypted?: boolean }).encrypted),
    remoteAddress: request.socket.remoteAddress,
    headers: request.headers,
  };
}

/**
 * Whether the client reached us over TLS: the connection is encrypted, or the peer is a trusted
 * proxy and every forwarding scheme it sent (`X-Forwarded-Proto`, `Forwarded`) says `https`, at
 * least one of them: a proxy that writes one of them passes the other on as the client wrote it, so
 * a forged header can only refuse. From any other peer, forwarding headers count for nothing.
 */
export function clientUsedTls(request: RequestTransport, trustedProxies: readonly string[]): boolean {
  if (request.encrypted) return true;
  const trusted = new Set(trustedProxies.map(normalize));
  if (!trusted.has(normalize(request.remoteAddress ?? ''))) return false;
  const schemes = [
    ...(request.headers['x-forwarded-proto'] !== undefined
      ? [xForwardedScheme(request.headers, trusted)]
      : []),
    ...(request.headers.forwarded !== undefined
      ? [forwardedScheme(headerText(request.headers.forwarded), trusted)]
      : []),
  ];
  return schemes.length > 0 && schemes.every((scheme) => scheme === 'https');
}

/**
 * Whether a pull request counts as TLS: the client used TLS (`clientUsedTls`), or it came from
 * loopback, not through a trusted proxy, without any forwarding header.
 */
export function isSecureForPull(request: RequestTransport, policy: TransportPolicy): boolean {
  if (policy.allowInsecurePull || clientUsedTls(request, policy.trustedProxies)) return true;
  const remote = normalize(request.remoteAddress ?? '');
  if (policy.trustedProxies.some((proxy) => normalize(proxy) === remote)) return false;
  const forwarded = Object.keys(request.headers).some((name) => FORWARDING_HEADERS.test(name.toLowerCase()));
  return LOOPBACK.test(remote) && !forwarded;
}

export function assertSecureForPull(request: RequestTransport, policy: TransportPolicy): void {
  if (!isSecureForPull(request, policy)) {
    throw new ForbiddenError(
      'Pull endpoints need HTTPS: claims can carry secrets. Use https://, or a proxy that terminates TLS and is trusted.',
      'tls_required',
    );
  }
}
