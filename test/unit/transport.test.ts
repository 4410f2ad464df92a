import type { IncomingHttpHeaders } from 'node:http';
import { clientUsedTls, isSecureForPull } from '../../api/middleware/transport';

const policy = { trustedProxies: ['10.0.0.5', '2001:db8::5'], allowInsecurePull: false };
const plain = (remoteAddress: string, forwardedProto?: string, forwardedFor?: string) => ({
  encrypted: false,
  remoteAddress,
  headers: {
    ...(forwardedProto !== undefined ? { 'x-forwarded-proto': forwardedProto } : {}),
    ...(forwardedFor !== undefined ? { 'x-forwarded-for': forwardedFor } : {}),
  },
});
const withHeaders = (remoteAddress: string, headers: IncomingHttpHeaders) => ({
  encrypted: false,
  remoteAddress,
  headers,
});

describe('pull transport', () => {
  it.each([
    ['TLS', { encrypted: true, remoteAddress: '203.0.113.9', headers: {} }, true],
    ['plain HTTP from loopback', plain('127.0.0.1'), true],
    ['plain HTTP from IPv6 loopback', plain('::1'), true],
    ['plain HTTP from mapped loopback', plain('::ffff:127.0.0.1'), true],
    ['plain HTTP from elsewhere', plain('203.0.113.9'), false],
    ['a trusted proxy saying https', plain('::ffff:10.0.0.5', 'https'), true],
    ['a trusted proxy saying http', plain('10.0.0.5', 'http'), false],
    ['an untrusted peer saying https', plain('203.0.113.9', 'https'), false],
    // Loopback is TLS only when no forwarding header says the request came from further
    // (docs/agents.md "Keys and transport").
    ['a local proxy forwarding plain HTTP', plain('127.0.0.1', 'http', '203.0.113.9'), false],
    ['a local proxy naming the client only', plain('127.0.0.1', undefined, '203.0.113.9'), false],
    ['a local proxy saying https, untrusted', plain('::1', 'https'), false],
    // The right-most untrusted element decides; what the client wrote to the left proves nothing.
    ['a client forging https before a trusted proxy', plain('10.0.0.5', 'https, http', '203.0.113.9'), false],
    ['a trusted proxy behind another', plain('10.0.0.5', 'https, http', '203.0.113.9, 10.0.0.5'), true],
    ['two trusted proxies, client on http', plain('10.0.0.5', 'http, https', '203.0.113.9, 10.0.0.5'), false],
    ['a forged hop left of the client', plain('10.0.0.5', 'https', '10.0.0.5, 203.0.113.9'), true],
  ])('%s → %s', (_, request, secure) => {
    expect(isSecureForPull(request, policy)).toBe(secure);
  });

  // `Forwarded` (RFC 7239) and `X-Real-IP` are forwarding headers too.
  it.each([
    [
      'a local proxy sending Forwarded',
      withHeaders('127.0.0.1', { forwarded: 'for=203.0.113.9;proto=http' }),
      false,
    ],
    ['a local proxy sending X-Real-IP', withHeaders('::1', { 'x-real-ip': '203.0.113.9' }), false],
    ['a local proxy sending Via', withHeaders('127.0.0.1', { via: '1.1 proxy' }), false],
    [
      'a local proxy sending X-Forwarded-Host',
      withHeaders('127.0.0.1', { 'x-forwarded-host': 'a.example' }),
      false,
    ],
    [
      'an untrusted peer sending Forwarded https',
      withHeaders('203.0.113.9', { forwarded: 'proto=https' }),
      false,
    ],
    [
      'a trusted proxy, Forwarded https',
      withHeaders('10.0.0.5', { forwarded: 'for=203.0.113.9;proto=https' }),
      true,
    ],
    [
      'a trusted proxy, Forwarded http',
      withHeaders('10.0.0.5', { forwarded: 'for=203.0.113.9;proto=http' }),
      false,
    ],
    [
      'a trusted proxy, Forwarded with quoted IPv6 and port',
      withHeaders('10.0.0.5', { forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https;by=10.0.0.5' }),
      true,
    ],
    [
      'a client forging Forwarded https before a trusted proxy',
      withHeaders('10.0.0.5', { forwarded: 'for=198.51.100.1;proto=https, for=203.0.113.9;proto=http' }),
      false,
    ],
    [
      'a trusted proxy behind another, by Forwarded',
      withHeaders('10.0.0.5', {
        forwarded: 'for=203.0.113.9;proto=https, for="[2001:db8::5]";proto=http',
      }),
      true,
    ],
    [
      'a trusted proxy writing X-Forwarded-Proto http, a forged Forwarded https',
      withHeaders('10.0.0.5', { 'x-forwarded-proto': 'http', forwarded: 'for=203.0.113.9;proto=https' }),
      false,
    ],
    [
      'a trusted proxy writing Forwarded http, a forged X-Forwarded-Proto https',
      withHeaders('10.0.0.5', { 'x-forwarded-proto': 'https', forwarded: 'for=203.0.113.9;proto=http' }),
      false,
    ],
    [
      'a trusted proxy sending both, https',
      withHeaders('10.0.0.5', { 'x-forwarded-proto': 'https', forwarded: 'for=203.0.113.9;proto=https' }),
      true,
    ],
    [
      'a trusted proxy naming the client only',
      withHeaders('10.0.0.5', { 'x-real-ip': '203.0.113.9' }),
      false,
    ],
    [
      'a trusted proxy, Forwarded without proto',
      withHeaders('10.0.0.5', { forwarded: 'for=203.0.113.9' }),
      false,
    ],
    [
      'a trusted proxy, a comma inside a quoted value',
      withHeaders('10.0.0.5', { forwarded: 'for="_a,b";proto=https' }),
      true,
    ],
  ])('%s → %s', (_, request, secure) => {
    expect(isSecureForPull(request, policy)).toBe(secure);
  });

  it('accepts anything when insecure pull is enabled', () => {
    expect(isSecureForPull(plain('203.0.113.9'), { ...policy, allowInsecurePull: true })).toBe(true);
  });
});

// docs/security.md "The board's session": its Secure cookie and own origin read the client's
// scheme the same way, without pull's allowance for loopback: plain HTTP from loopback is plain HTTP.
describe("the client's scheme", () => {
  it.each([
    ['TLS', { encrypted: true, remoteAddress: '203.0.113.9', headers: {} }, true],
    ['plain HTTP from loopback', plain('127.0.0.1'), false],
    ['a trusted proxy saying https', plain('::ffff:10.0.0.5', 'https'), true],
    [
      'a trusted proxy, Forwarded https',
      withHeaders('10.0.0.5', { forwarded: 'for=203.0.113.9;proto=https' }),
      true,
    ],
    ['a trusted proxy saying http', plain('10.0.0.5', 'http'), false],
    ['an untrusted peer saying https', plain('203.0.113.9', 'https'), false],
    ['loopback saying https, untrusted', plain('127.0.0.1', 'https'), false],
    ['an untrusted peer sending Forwarded https', withHeaders('::1', { forwarded: 'proto=https' }), false],
  ])('%s → %s', (_, request, tls) => {
    expect(clientUsedTls(request, policy.trustedProxies)).toBe(tls);
  });
});
