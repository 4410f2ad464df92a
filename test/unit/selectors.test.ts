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
