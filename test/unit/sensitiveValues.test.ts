import { SecretBox } from '../../db/secrets';
import { openProbeHeaders, redactProbeHeaders, sealConfig, sealProbeHeaders } from '../../db/sensitiveValues';
import { ValidationError } from '../../domain/errors';

/** Issue 13 (13): what is sensitive is enforced, at any depth, and probe headers are secrets. */
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
    const headersOf = (r: typeof kept) =>
      (r!.verification as { metrics: { provider: { headers: Record<string, unknown> } }[] }).metrics[0]!
        .provider.headers;
    expect(openProbeHeaders(box, headersOf(kept))).toEqual({ Authorization: 'Bearer s3cret' });
    expect(() => sealProbeHeaders(box, [shown!], [])).toThrow(ValidationError);
  });
});
