import { checkSelector, selectorMatches } from '../../domain/selectors';

const resource = {
  kind: 'service',
  version: 'v1',
  name: 'api',
  identifier: 'prod/api',
  metadata: { env: 'qa', team: 'payments' },
  config: { replicas: 3, region: 'eu' },
};

describe('CEL selectors', () => {
  it.each([
    ['resource.kind == "service"', true],
    ['resource.kind == "database"', false],
    ['resource.metadata["env"] == "qa" && resource.name.startsWith("a")', true],
    ['resource.identifier.endsWith("/api") && resource.identifier.contains("prod")', true],
    ['"team" in resource.metadata', true],
    ['resource.config["region"] == "eu"', true],
  ])('%s → %s', (expression, expected) => {
    expect(checkSelector('resource', expression)).toBeUndefined();
    expect(selectorMatches('resource', expression, { resource })).toBe(expected);
  });

  it('does not match, instead of failing, when a metadata key is missing', () => {
    expect(selectorMatches('resource', 'resource.metadata["zone"] == "a"', { resource })).toBe(false);
    expect(selectorMatches('resource', 'resource.metadata["zone"] != "a"', { resource })).toBe(false);
  });

  it('reports syntax errors with their position', () => {
    expect(checkSelector('resource', 'resource.kind ==')).toMatchObject({
      line: 1,
      column: 17,
      position: 16,
    });
    expect(checkSelector('resource', 'resource.kind == "a" &&\n  resource.metadata[')).toMatchObject({
      line: 2,
    });
  });

  it('refuses unknown fields, unknown identifiers and type mismatches', () => {
    expect(checkSelector('resource', 'resource.knd == "x"')?.message).toMatch(/knd/);
    expect(checkSelector('resource', 'deployment.name == "x"')?.message).toMatch(/deployment/);
    expect(checkSelector('resource', 'resource.kind == 1')?.message).toMatch(/overload/);
    expect(checkSelector('resource', 'resource.kind')?.message).toMatch(/bool/);
  });

  it('lets policy selectors see the resource, deployment and environment', () => {
    const expression = 'environment.name == "prod" && deployment.slug == "api" && resource.kind == "service"';
    expect(checkSelector('target', expression)).toBeUndefined();
    expect(
      selectorMatches('target', expression, {
        resource,
        deployment: { id: 'd', name: 'API', slug: 'api', metadata: {} },
        environment: { id: 'e', name: 'prod', metadata: {} },
      }),
    ).toBe(true);
  });

  it('refuses matches(), whose regular expressions can backtrack without bound', () => {
    const problem = checkSelector('resource', 'resource.name.matches("(a+)+$")');
    expect(problem?.message).toMatch(/matches\(\) is not allowed/);
    expect(problem?.column).toBeGreaterThan(0);
    expect(selectorMatches('resource', 'resource.name.matches("a")', { resource })).toBe(false);
  });

  it('refuses empty and oversized expressions', () => {
    expect(checkSelector('resource', '  ')?.message).toMatch(/empty/);
    expect(checkSelector('resource', `resource.name == "${'x'.repeat(5000)}"`)?.message).toMatch(/longer/);
  });
});

describe('CEL expression cost', () => {
  /** `cel.bind` levels, each binding its variable to the previous one repeated `times` times. */
  function bindBomb(levels: number, times: number, seed = 'xx'): string {
    let expression = `v${levels}.size() > 0`;
    for (let i = levels; i >= 1; i--) {
      expression = `cel.bind(v${i}, ${Array(times)
        .fill(`v${i - 1}`)
        .join(' + ')}, ${expression})`;
    }
    return `cel.bind(v0, '${seed}', ${expression})`;
  }

  it('refuses the doubling cel.bind bomb (2^31 characters) without evaluating it', () => {
    const bomb = bindBomb(30, 2);
    expect(bomb.length).toBeLessThan(1000);
    expect(checkSelector('resource', bomb)?.message).toMatch(/more than 8 comprehensions and cel.bind/);
    expect(selectorMatches('resource', bomb, { resource })).toBe(false);
  });

  it('refuses a value that grows past the limit within few binds', () => {
    const problem = checkSelector('resource', bindBomb(7, 10, 'x'.repeat(100)));
    expect(problem?.message).toMatch(/can build a value of .* more than the limit/);
    expect(problem?.line).toBe(1);
    // The same shape, small enough, is fine.
    expect(checkSelector('resource', bindBomb(3, 10))).toBeUndefined();
    expect(selectorMatches('resource', bindBomb(3, 10), { resource })).toBe(true);
  });

  it('refuses comprehensions chained to multiply a value', () => {
    const chain = `['${'x'.repeat(100)}']${'.map(s, s + s)'.repeat(9)}.size() > 0`;
    expect(checkSelector('resource', chain)?.message).toMatch(/more than 8 comprehensions/);
    const shorter = `['${'x'.repeat(100)}']${'.map(s, s + s + s + s + s + s + s + s + s + s)'.repeat(7)}.size() > 0`;
    expect(checkSelector('resource', shorter)?.message).toMatch(/can build a value/);
  });

  it('refuses comprehensions nested three deep, and nested ones that cost too much', () => {
    const list = '[1, 2, 3, 4, 5, 6, 7, 8]';
    const nested = `${list}.map(a, ${list}.map(b, ${list}.map(c, a + b + c))).size() > 0`;
    expect(checkSelector('resource', nested)?.message).toMatch(/nest more than 2 deep/);
    const pairs = 'resource.config.a.all(x, resource.config.b.all(y, x == y))';
    expect(checkSelector('resource', pairs)?.message).toMatch(
      /evaluating the expression can cost .* more than the limit/,
    );
  });

  it('accepts selectors that read records, one comprehension over a record, and small binds', () => {
    for (const expression of [
      'resource.config.tags.exists(t, t.contains("prod"))',
      'resource.config.items.exists(i, i.name == "x" && i.tags.exists(t, t == "y"))',
      'resource.metadata["a"] + "-" + resource.metadata["b"] == resource.name',
      'cel.bind(env, resource.metadata["env"], env == "prod" || env == "staging")',
    ]) {
      expect(checkSelector('resource', expression)).toBeUndefined();
    }
    const tagged = { ...resource, config: { tags: ['eu-prod'] } };
    expect(
      selectorMatches('resource', 'resource.config.tags.exists(t, t.contains("prod"))', { resource: tagged }),
    ).toBe(true);
  });
});
