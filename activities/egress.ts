import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/**
 * The egress policy of the worker: every request it sends on a caller's behalf (HTTP verification
 * metrics, push agents' services) goes through an `Egress` built from it. By default it refuses loopback,
 * link-local (cloud metadata endpoints), private, carrier-grade NAT, multicast and unspecified
 * addresses; `FLIGHTDECK_EGRESS_ALLOW` lifts that for the CIDRs, addresses and host patterns it
 * names, `FLIGHTDECK_EGRESS_DENY` refuses more (and wins over allow). Webhooks have a policy of their
 * own (activities/index.ts): `FLIGHTDECK_WEBHOOK_EGRESS_ALLOW` instead of the agents' allow-list, the
 * same deny-list, so opening a private range to an agent's service never opens it to every
 * workspace's webhooks. The address checked is the one connected to, after DNS (a name that
 * resolves to a refused address is refused: no rebinding), and redirects are never followed, so no
 * answer can lead a request somewhere the policy refuses.
 */
export interface EgressPolicy {
  allow: readonly string[];
  deny: readonly string[];
}

export const DEFAULT_EGRESS_POLICY: EgressPolicy = { allow: [], deny: [] };

const REFUSED_BY_DEFAULT: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['224.0.0.0', 3, 'ipv4'],
  ['::', 127, 'ipv6'],
  ['64:ff9b::', 96, 'ipv6'],
  // Local-use NAT64 (RFC 8215): a translator of the worker's own network.
  ['64:ff9b:1::', 48, 'ipv6'],
  // Teredo: tunnels to an address obscured in the last 32 bits.
  ['2001::', 32, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  // Site-local (deprecated, still routed inside some networks).
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i;

/** Why an entry of FLIGHTDECK_EGRESS_ALLOW/DENY is not a CIDR, an address or a host pattern, if it is not. */
export function egressEntryProblem(entry: string): string | undefined {
  const [address, bits, extra] = entry.split('/');
  if (extra !== undefined) return `${entry} is not a CIDR`;
  const family = net.isIP(address ?? '');
  if (family !== 0) {
    if (bits === undefined) return undefined;
    const n = Number(bits);
    return /^\d+$/.test(bits) && n <= (family === 4 ? 32 : 128)
      ? undefined
      : `${entry} has a bad prefix length`;
  }
  if (bits === undefined && HOST_PATTERN.test(entry)) return undefined;
  return `${entry} is neither a CIDR, an address nor a host pattern (example.com, *.example.com)`;
}

/** The 16 bytes of an IPv6 address (a zone id dropped), or undefined when it is not one. */
function ipv6Bytes(address: string): number[] | undefined {
  const text = address.replace(/%.*$/, '');
  if (!net.isIPv6(text)) return undefined;
  let groups = text.split(':');
  const last = groups[groups.length - 1]!;
  if (last.includes('.')) {
    const octets = last.split('.').map(Number);
    groups = [
      ...groups.slice(0, -1),
      ((octets[0]! << 8) | octets[1]!).toString(16),
      ((octets[2]! << 8) | octets[3]!).toString(16),
    ];
  }
  const gap = groups.indexOf('');
  if (gap !== -1) {
    const head = groups.slice(0, gap);
    const tail = groups.slice(groups.lastIndexOf('') + 1);
    groups = [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail];
  }
  return groups.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

const startsWith = (bytes: number[], prefix: number[]) => prefix.every((byte, i) => bytes[i] === byte);
const dotted = (bytes: number[]) => bytes.join('.');

/**
 * The IPv4 address an IPv6 address reaches, where the IPv6 form embeds one: IPv4-mapped
 * (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`),
 * well-known NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`). A request to one of them
 * lands on that IPv4 address, so the policy judges it by that address as well.
 */
export function embeddedIPv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  if (!bytes) return undefined;
  const zeros = (n: number) => Array<number>(n).fill(0);
  if (startsWith(bytes, [...zeros(10), 0xff, 0xff])) return dotted(bytes.slice(12));
  if (startsWith(bytes, zeros(12))) return dotted(bytes.slice(12));
  if (startsWith(bytes, [...zeros(8), 0xff, 0xff, 0, 0])) return dotted(bytes.slice(12));
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, ...zeros(8)])) return dotted(bytes.slice(12));
  if (startsWith(bytes, [0x20, 0x02])) return dotted(bytes.slice(2, 6));
  return undefined;
}

/** The addresses a connection to `address` reaches: itself, and the IPv4 address it embeds. */
function reachedAddresses(address: string): { address: string; type: 'ipv4' | 'ipv6' }[] {
  if (net.isIPv4(address)) return [{ address, type: 'ipv4' }];
  const ipv4 = embeddedIPv4(address);
  return [
    { address: address.replace(/%.*$/, ''), type: 'ipv6' },
    ...(ipv4 ? [{ address: ipv4, type: 'ipv4' as const }] : []),
  ];
}

class EgressRules {
  private readonly refused = new net.BlockList();
  private readonly allowed = new net.BlockList();
  private readonly denied = new net.BlockList();
  private readonly allowedHosts: string[] = [];
  private readonly deniedHosts: string[] = [];

  constructor(policy: EgressPolicy) {
    for (const [address, bits, type] of REFUSED_BY_DEFAULT) this.refused.addSubnet(address, bits, type);
    for (const [entries, list, hosts] of [
      [policy.allow, this.allowed, this.allowedHosts],
      [policy.deny, this.denied, this.deniedHosts],
    ] as const) {
      for (const entry of entries) {
        const problem = egressEntryProblem(entry);
        if (problem) throw new Error(problem);
        const [address, bits] = entry.split('/');
        const family = net.isIP(address!);
        if (family === 0) hosts.push(entry.toLowerCase());
        else
          list.addSubnet(
            address!,
            bits === undefined ? (family === 4 ? 32 : 128) : Number(bits),
            family === 4 ? 'ipv4' : 'ipv6',
          );
      }
    }
  }

  private static hostMatches(patterns: string[], host: string): boolean {
    const name = host.toLowerCase();
    return patterns.some((pattern) =>
      pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern,
    );
  }

  /**
   * Why a connection to `address` (for `host`) is refused, if it is. An IPv6 address that embeds an
   * IPv4 address is refused when either form is: each must pass on its own.
   */
  refusal(host: string, address: string): string | undefined {
    const reached = reachedAddresses(address);
    if (
      reached.some((form) => this.denied.check(form.address, form.type)) ||
      EgressRules.hostMatches(this.deniedHosts, host)
    )
      return `${host} is denied by the egress policy`;
    if (EgressRules.hostMatches(this.allowedHosts, host)) return undefined;
    const refused = reached.some(
      (form) => this.refused.check(form.address, form.type) && !this.allowed.check(form.address, form.type),
    );
    if (!refused) return undefined;
    return `${host} resolves to a loopback, link-local or private address, which the egress policy refuses`;
  }
}

/** A request the egress policy refused; its message names the host, never what answered there. */
export class EgressRefusedError extends Error {}

export interface EgressRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs: number;
  /** Bytes of the answer kept; the rest is not read. */
  maxBytes: number;
}

export interface EgressResponse {
  status: number;
  ok: boolean;
  text: string;
}

/**
 * Sends requests under one egress policy: built once by the worker from its configuration
 * (activities/index.ts) and handed to every activity that reaches another system.
 */
export class Egress {
  private readonly rules: EgressRules;

  constructor(policy: EgressPolicy = DEFAULT_EGRESS_POLICY) {
    this.rules = new EgressRules(policy);
  }

  /** One HTTP(S) request under the policy. Redirects are answers, never followed. */
  request(target: string, request: EgressRequest): Promise<EgressResponse> {
    return egressRequest(this.rules, target, request);
  }
}

function egressRequest(rules: EgressRules, target: string, request: EgressRequest): Promise<EgressResponse> {
  const url = new URL(target);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.reject(new EgressRefusedError(`${url.protocol} URLs are not allowed`));
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host)) {
    const refused = rules.refusal(host, host);
    if (refused) return Promise.reject(new EgressRefusedError(refused));
  }
  const checked = rules;
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 4);
      const refused = addresses.map((entry) => checked.refusal(hostname, entry.address)).find(Boolean);
      if (refused) return callback(new EgressRefusedError(refused), '', 4);
      if (options.all)
        return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = transport.request(
      url,
      {
        method: request.method ?? 'GET',
        headers: request.headers,
        lookup,
        signal: AbortSignal.timeout(request.timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size >= request.maxBytes) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size >= request.maxBytes) res.destroy();
        });
        const done = () => {
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            text: Buffer.concat(chunks).subarray(0, request.maxBytes).toString('utf8'),
          });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(request.body);
  });
}

/**
 * A failed request as short, fixed text: which kind of failure, never the address, the system's
 * error text or what answered, so a probe cannot map what lies behind the worker.
 */
export function describeEgressFailure(error: unknown): string {
  if (error instanceof EgressRefusedError) return error.message;
  const { name, code } = (error ?? {}) as { name?: string; code?: string };
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'ABORT_ERR')
    return 'the request timed out';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host name does not resolve';
  return 'the connection failed';
}
