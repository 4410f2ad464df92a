import { SecretBox } from '../../db/secrets';
import { openProvider, redactProbeHeaders, sealConfig, sealProbeHeaders } from '../../db/sensitiveValues';
import { ValidationError } from '../../domain/errors';

/**
 * What is sensitive is enforced, at any depth, and probe headers are secrets
 * (docs/security.md "Encryption").
 */
describe('sensitive values', () => {
  const box = new SecretBox(Buffer.alloc(32, 3)).forRecord('w', 'policy', 'p');

  it('seals top-level secrets and refuses a secret key deeper in a configuration', () => {
    const sealed = sealConfig(box, { token: 't0p', owner: 'acme' }, undefined, 'body.config');
    expect(SecretBox.isSealed(sealed.token)).toBe(true);
    expect(sealed.owner).toBe('acme');
    for (const nested of [{ auth: { token: 'x' } }, { list: [{ password: 'y' }] }]) {
      const error = (() => {
        try {
          sealConfig(box, nested, undefined, 'body.config');
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect(JSON.stringify((error as ValidationError).issues)).toMatch(
        /body\.config\.(auth\.token|list\[0\]\.password)/,
      );
    }
  });

  it('seals probe headers, shows them redacted, keeps them when written back so, and opens them for the probe', () => {
    const rule = (headers: Record<string, unknown>) => ({
      id: 'r1',
      verification: { metrics: [{ name: 'm', provider: { type: 'http', url: 'https://x', headers } }] },
    });
    const [stored] = sealProbeHeaders(box, [rule({ Authorization: 'Bearer s3cret' })], []);
    expect(JSON.stringify(stored)).not.toContain('s3cret');
    const [shown] = redactProbeHeaders([stored!]);
    expect(shown).toEqual(rule({ Authorization: { sensitive: true } }));
    const [kept] = sealProbeHeaders(box, [shown!], [stored!]);
    const providerOf = (r: typeof kept) =>
      (r!.verification as { metrics: { provider: Record<string, unknown> }[] }).metrics[0]!.provider;
    expect(openProvider(box, providerOf(kept))).toEqual({
      type: 'http',
      url: 'https://x',
      headers: { Authorization: 'Bearer s3cret' },
    });
    expect(() => sealProbeHeaders(box, [shown!], [])).toThrow(ValidationError);
  });

  it('seals the other providers’ credentials at their paths, redacts and opens them the same way', () => {
    const providers = [
      { type: 'datadog', apiKey: 'dd-api', appKey: 'dd-app', queries: { q: 'avg:x{*}' } },
      {
        type: 'prometheus',
        address: 'https://prom',
        query: 'up',
        authentication: {
          bearerToken: 'prom-token',
          oauth2: { tokenUrl: 'https://t', clientId: 'c', clientSecret: 'prom-secret' },
        },
      },
      { type: 'terraformCloudRun', address: 'https://app.terraform.io', token: 'tfc-token', runId: 'run-1' },
    ];
    const rules = [
      { id: 'r2', verification: { metrics: providers.map((provider, i) => ({ name: `m${i}`, provider })) } },
    ];
    const [stored] = sealProbeHeaders(box, rules, []);
    for (const secret of ['dd-api', 'dd-app', 'prom-token', 'prom-secret', 'tfc-token'])
      expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(stored)).toContain('avg:x{*}');
    const [shown] = redactProbeHeaders([stored!]);
    const metricsOf = (r: typeof stored) =>
      (r!.verification as { metrics: { provider: Record<string, unknown> }[] }).metrics;
    expect(metricsOf(shown)[0]!.provider).toMatchObject({
      apiKey: { sensitive: true },
      appKey: { sensitive: true },
    });
    expect(metricsOf(shown)[1]!.provider).toMatchObject({
      authentication: {
        bearerToken: { sensitive: true },
        oauth2: { clientId: 'c', clientSecret: { sensitive: true } },
      },
    });
    const [kept] = sealProbeHeaders(box, [shown!], [stored!]);
    expect(metricsOf(kept).map((metric) => openProvider(box, metric.provider))).toEqual(providers);
  });
});
