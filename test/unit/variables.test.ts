import {
  matchingVariableSets,
  resolveVariables,
  type ReferenceTargets,
  type VariableDefinition,
  type VariableSetDefinition,
  type VariableSources,
} from '../../domain/variables';

/** Variable resolution: resource variable, then matching deployment values, then matching sets, then the default. */

const TARGETS: ReferenceTargets = {
  workspace: { slug: 'main' },
  deployment: { slug: 'api' },
  environment: { name: 'prod' },
  resource: { metadata: { region: 'eu-west-1' } },
  version: { tag: '1.0.0' },
};

/** Selectors are opaque here: a set or value matches when its selector is "yes". */
const MATCHES = { resource: (selector: string) => selector === 'yes', target: (s: string) => s === 'yes' };

function set(
  name: string,
  priority: number,
  variables: Record<string, unknown>,
  options: { selector?: string; sensitive?: string[] } = {},
): VariableSetDefinition {
  return {
    id: `set-${name}`,
    name,
    priority,
    selector: options.selector ?? 'yes',
    variables: Object.entries(variables).map(([key, value]) => {
      const reference = (value as { reference?: unknown } | null)?.reference ? value : undefined;
      return {
        key,
        ...(reference ? { reference: reference as never } : { value }),
        sensitive: options.sensitive?.includes(key) ?? false,
      };
    }),
  };
}

function definition(key: string, fields: Partial<VariableDefinition> = {}): VariableDefinition {
  return { key, sensitive: false, values: [], ...fields };
}

function resolve(sources: Partial<VariableSources>) {
  const resolved = resolveVariables(
    { definitions: [], resource: [], sets: [], ...sources },
    TARGETS,
    MATCHES,
  );
  return Object.fromEntries(resolved.map((variable) => [variable.key, variable]));
}

const valueOf = (sources: Partial<VariableSources>, key: string) => resolve(sources)[key]?.value;

describe('resolveVariables with variable sets', () => {
  const LOG_LEVEL = definition('LOG_LEVEL', {
    defaultValue: 'info',
    values: [
      { id: 'v1', priority: 5, value: 'debug', resourceSelector: 'yes', sensitive: false },
      { id: 'v2', priority: 9, value: 'trace', resourceSelector: 'no', sensitive: false },
    ],
  });

  it('puts a matching set above the default and below the deployment values that match', () => {
    const sets = [set('ops', 0, { LOG_LEVEL: 'warn' })];
    expect(valueOf({ definitions: [LOG_LEVEL], sets }, 'LOG_LEVEL')).toBe('debug');
    const withoutMatchingValue = { ...LOG_LEVEL, values: [LOG_LEVEL.values[1]!] };
    expect(resolve({ definitions: [withoutMatchingValue], sets }).LOG_LEVEL).toMatchObject({
      value: 'warn',
      source: 'variable_set',
      variableSetId: 'set-ops',
    });
    expect(valueOf({ definitions: [withoutMatchingValue] }, 'LOG_LEVEL')).toBe('info');
  });

  it("lets the resource's own variable beat every set, also for a key only a set defines", () => {
    const sets = [set('ops', 100, { LOG_LEVEL: 'warn', REGION: 'us' })];
    const resource = [
      { key: 'LOG_LEVEL', value: 'error', sensitive: false },
      { key: 'REGION', value: 'ap', sensitive: false },
    ];
    expect(resolve({ definitions: [LOG_LEVEL], sets, resource })).toMatchObject({
      LOG_LEVEL: { value: 'error', source: 'resource' },
      REGION: { value: 'ap', source: 'resource' },
    });
  });

  it('takes the higher-priority set first, and the name between sets of one priority', () => {
    expect(valueOf({ sets: [set('low', 1, { K: 'low' }), set('high', 2, { K: 'high' })] }, 'K')).toBe('high');
    expect(valueOf({ sets: [set('beta', 1, { K: 'beta' }), set('alpha', 1, { K: 'alpha' })] }, 'K')).toBe(
      'alpha',
    );
  });

  it('ignores a set whose selector does not match the target', () => {
    const sets = [set('other', 100, { K: 'other' }, { selector: 'no' }), set('mine', 0, { K: 'mine' })];
    expect(valueOf({ sets }, 'K')).toBe('mine');
    expect(resolve({ sets: [set('other', 0, { ONLY: 'x' }, { selector: 'no' })] })).toEqual({});
  });

  it('includes keys only a set defines, after the deployment variables, sorted', () => {
    const sets = [set('ops', 0, { ZED: 1, ALPHA: { object: true }, LOG_LEVEL: 'warn' })];
    const keys = resolveVariables({ definitions: [LOG_LEVEL], resource: [], sets }, TARGETS, MATCHES).map(
      (variable) => variable.key,
    );
    expect(keys).toEqual(['LOG_LEVEL', 'ALPHA', 'ZED']);
  });

  it('follows a set reference, and falls through to the next set when it leads nowhere', () => {
    const sets = [
      set('first', 2, { REGION: { reference: 'resource', path: ['metadata', 'region'] } }),
      set('second', 1, { ZONE: 'fallback' }),
      set('third', 3, { ZONE: { reference: 'resource', path: ['metadata', 'zone'] } }),
    ];
    expect(resolve({ sets })).toMatchObject({
      REGION: { value: 'eu-west-1', variableSetId: 'set-first' },
      ZONE: { value: 'fallback', variableSetId: 'set-second' },
    });
  });

  it("marks a set value sensitive when the set's variable or the deployment variable says so", () => {
    const sets = [set('ops', 0, { TOKEN: 't', PLAIN: 'p', SECRET_KEY: 's' }, { sensitive: ['TOKEN'] })];
    expect(resolve({ definitions: [definition('SECRET_KEY', { sensitive: true })], sets })).toMatchObject({
      TOKEN: { sensitive: true },
      PLAIN: { sensitive: false },
      SECRET_KEY: { value: 's', sensitive: true },
    });
  });
});

describe('matchingVariableSets', () => {
  it('orders by priority, then name, then id', () => {
    const sets = [
      { ...set('b', 1, {}), id: 'z' },
      { ...set('b', 1, {}), id: 'a' },
      set('a', 1, {}),
      set('c', 5, {}),
      set('x', 9, {}, { selector: 'no' }),
    ];
    expect(matchingVariableSets(sets, MATCHES.target).map((s) => `${s.name}/${s.id}`)).toEqual([
      'c/set-c',
      'a/set-a',
      'b/a',
      'b/z',
    ]);
  });
});
