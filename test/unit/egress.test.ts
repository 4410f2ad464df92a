import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DEFAULT_EGRESS_POLICY,
  describeEgressFailure,
  egressEntryProblem,
  Egress,
  embeddedIPv4,
  EgressRefusedError,
  type EgressPolicy,
} from '../../activities/egress';

/**
 * The worker's outbound requests refuse loopback, link-local (metadata) and private addresses unless
 * allowed, check the address connected to (after DNS), never follow redirects, and describe failures
 * without what answered (docs/security.md "Egress").
 */
describe('egress policy', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  let egress = new Egress();
  const usePolicy = (policy: EgressPolicy) => (egress = new Egress(policy));
  const request = (url: string) => egress.request(url, { timeoutMs: 2_000, maxBytes: 1024 });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits++;
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(4096));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('refuses loopback, link-local, private and mapped addresses by default, before connecting', async () => {
    usePolicy(DEFAULT_EGRESS_POLICY);
    for (const url of [
      `http://127.0.0.1:${port}/`,
      `http://localhost:${port}/`,
      `http://[::1]:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.1.2.3/',
      'http://192.168.0.1/',
      'http://172.20.0.1/',
      'file:///etc/passwd',
    ]) {
      await expect(request(url)).rejects.toBeInstanceOf(EgressRefusedError);
    }
    expect(hits).toBe(0);
  });

  // An IPv6 address that embeds an IPv4 address reaches that address, so both forms are judged.
  it('refuses IPv6 forms that embed a refused IPv4 address, and site-local and Teredo addresses', async () => {
    usePolicy(DEFAULT_EGRESS_POLICY);
    for (const url of [
      `http://[::127.0.0.1]:${port}/`,
      `http://[0:0:0:0:0:ffff:7f00:1]:${port}/`,
      `http://[::ffff:0:127.0.0.1]:${port}/`,
      'http://[::ffff:0:a9fe:a9fe]/',
      'http://[64:ff9b::10.0.0.1]/',
      'http://[64:ff9b:1::a00:1]/',
      `http://[2002:7f00:1::1]:${port}/`,
      'http://[2002:c0a8:101::1]/',
      'http://[2002:a9fe:a9fe::]/',
      'http://[fec0::1]/',
      'http://[feff:ffff::1]/',
      'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/',
    ]) {
      await expect(request(url)).rejects.toBeInstanceOf(EgressRefusedError);
    }
    expect(hits).toBe(0);
    expect(embeddedIPv4('::ffff:7f00:1')).toBe('127.0.0.1');
    expect(embeddedIPv4('::10.1.2.3')).toBe('10.1.2.3');
    expect(embeddedIPv4('64:ff9b::c0a8:1')).toBe('192.168.0.1');
    expect(embeddedIPv4('2002:808:808::1')).toBe('8.8.8.8');
    expect(embeddedIPv4('fe80::1%eth0')).toBeUndefined();
    expect(embeddedIPv4('2001:4860:4860::8888')).toBeUndefined();
    expect(embeddedIPv4('8.8.8.8')).toBeUndefined();
  });

  it('judges each form on its own: allowing the IPv6 range does not allow the IPv4 address inside', async () => {
    usePolicy({ allow: ['2002::/16', '::/96'], deny: [] });
    await expect(request(`http://[2002:7f00:1::1]:${port}/`)).rejects.toBeInstanceOf(EgressRefusedError);
    await expect(request(`http://[::127.0.0.1]:${port}/`)).rejects.toBeInstanceOf(EgressRefusedError);
    usePolicy({ allow: [], deny: ['203.0.113.0/24'] });
    await expect(request('http://[2002:cb00:7101::1]/')).rejects.toThrow(/denied by the egress policy/);
    await expect(request('http://[::ffff:203.0.113.1]/')).rejects.toThrow(/denied by the egress policy/);
    expect(hits).toBe(0);
  });

  it('lets configuration allow a range, deny a host over it, and never follows a redirect', async () => {
    usePolicy({ allow: ['127.0.0.0/8'], deny: ['localhost'] });
    const answer = await request(`http://127.0.0.1:${port}/`);
    expect(answer).toMatchObject({ status: 200, ok: true });
    expect(answer.text).toHaveLength(1024);
    await expect(request(`http://localhost:${port}/`)).rejects.toBeInstanceOf(EgressRefusedError);
    const redirected = await request(`http://127.0.0.1:${port}/redirect`);
    expect(redirected).toMatchObject({ status: 302, ok: false });
    expect(hits).toBe(2);
  });

  it('validates configured entries and describes failures without details', async () => {
    expect(egressEntryProblem('10.0.0.0/8')).toBeUndefined();
    expect(egressEntryProblem('fd00::/8')).toBeUndefined();
    expect(egressEntryProblem('*.internal.example')).toBeUndefined();
    expect(egressEntryProblem('10.0.0.0/33')).toBeDefined();
    expect(egressEntryProblem('http://x')).toBeDefined();
    usePolicy({ allow: ['127.0.0.0/8'], deny: [] });
    const closed = await request('http://127.0.0.1:1/').catch((error: unknown) => error);
    expect(describeEgressFailure(closed)).toBe('the connection failed');
  });
});
