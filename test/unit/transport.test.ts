import { isSecureForPull } from '../../api/middleware/transport';

const policy = { trustedProxies: ['10.0.0.5'], allowInsecurePull: false };
const plain = (remoteAddress: string, forwardedProto?: string, forwardedFor?: string) => ({
  encrypted: false,
  remoteAddress,
  forwardedProto,
  forwardedFor,
});

describe('pull transport', () => {
  it.each([
    ['TLS', { encrypted: true, remoteAddress: '203.0.113.9', forwardedProto: undefined }, true],
    ['plain HTTP from loopback', plain('127.0.0.1'), true],
    ['plain HTTP from IPv6 loopback', plain('::1'), true],
    ['plain HTTP from mapped loopback', plain('::ffff:127.0.0.1'), true],
    ['plain HTTP from elsewhere', plain('203.0.113.9'), false],
    ['a trusted proxy saying https', plain('::ffff:10.0.0.5', 'https'), true],
    ['a trusted proxy saying http', plain('10.0.0.5', 'http'), false],
    ['an untrusted peer saying https', plain('203.0.113.9', 'https'), false],
    // Issue 13 (15): loopback is TLS only when no forwarding header says the request came from further.
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

  it('accepts anything when insecure pull is enabled', () => {
    expect(isSecureForPull(plain('203.0.113.9'), { ...policy, allowInsecurePull: true })).toBe(true);
  });
});
