import { ValidationError } from '../../domain/errors';
import {
  looksLikeSecretReference,
  replaceSecretReferences,
  secretReferencesIn,
} from '../../domain/secretReferences';

describe('references to workspace secrets', () => {
  it('finds every reference in a tree, with the path it was written at', () => {
    const tree = { apiKey: 'secret://dd-api', nested: { list: ['plain', 'secret://dd.app_2'] }, n: 3 };
    expect(secretReferencesIn(tree, 'body')).toEqual([
      { name: 'dd-api', path: 'body.apiKey' },
      { name: 'dd.app_2', path: 'body.nested.list[1]' },
    ]);
    expect(secretReferencesIn('secret-ish but plain', 'body')).toEqual([]);
  });

  it('refuses a reference whose name no secret can have, naming where it was written', () => {
    for (const bad of ['secret://', 'secret://-dash', 'secret://with space', `secret://${'a'.repeat(129)}`]) {
      expect(looksLikeSecretReference(bad)).toBe(true);
      expect(() => secretReferencesIn({ token: bad }, 'body.config')).toThrow(ValidationError);
    }
    const refusal = (() => {
      try {
        secretReferencesIn({ token: 'secret://a b' }, 'body.config');
      } catch (error) {
        return error as ValidationError;
      }
    })();
    expect(refusal?.issues).toEqual([
      { path: 'body.config.token', message: expect.stringContaining('secret://<name>') },
    ]);
  });

  it('replaces references by value and leaves everything else as it was', () => {
    const values = new Map([['dd-api', 'the-key']]);
    expect(
      replaceSecretReferences(
        { apiKey: 'secret://dd-api', site: 'datadoghq.com', list: ['secret://dd-api'] },
        values,
      ),
    ).toEqual({
      apiKey: 'the-key',
      site: 'datadoghq.com',
      list: ['the-key'],
    });
    expect(replaceSecretReferences('secret://unknown', values)).toBe('secret://unknown');
  });
});
