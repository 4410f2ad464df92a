import { isSecureForPull } from '../../api/middleware/transport';

const policy = { trustedProxies: ['10.0.0.5'], allowInsecurePull: false };
const plain = (remoteAddress: string, forwardedProto?: string) => ({
  encrypted: false,
  remoteAddress,
  forwardedProto,
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
  ])('%s → %s', (_, request, secure) => {
    expect(isSecureForPull(request, policy)).toBe(secure);
  });

  it('accepts anything when insecure pull is enabled', () => {
    expect(isSecureForPull(plain('203.0.113.9'), { ...policy, allowInsecurePull: true })).toBe(true);
  });
});
