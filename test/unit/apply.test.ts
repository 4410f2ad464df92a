import { changedFields, mergedBody, sameValue } from '../../cli/apply/compare';
import { parseDocument } from '../../cli/apply/documents';

const source = { file: 'f.yaml', index: 3 };
const strict = { rewriteSecrets: false };

describe('apply: comparing a document with a record', () => {
  it('treats null and absent alike, and compares nested values exactly', () => {
    expect(sameValue(undefined, null, strict)).toBe(true);
    expect(sameValue(null, 'x', strict)).toBe(false);
    expect(sameValue({ a: 1, b: null }, { a: 1 }, strict)).toBe(true);
    expect(sameValue({ a: 1 }, { a: 1, b: 2 }, strict)).toBe(false);
    expect(sameValue([1, 2], [1, 2, 3], strict)).toBe(false);
    expect(sameValue([{ ref: 'p', config: {} }], [{ ref: 'p', config: {}, selector: null }], strict)).toBe(
      true,
    );
  });

  it('counts a stored secret as equal unless asked to rewrite secrets', () => {
    const stored = { url: 'https://x', token: { sensitive: true } };
    expect(sameValue({ url: 'https://x', token: 'abc' }, stored, strict)).toBe(true);
    expect(sameValue({ url: 'https://x', token: 'abc' }, stored, { rewriteSecrets: true })).toBe(false);
  });

  it('lists only the given fields that differ, and merges a full body', () => {
    const current = { name: 'qa', description: 'old', resourceSelector: 'true', metadata: {} };
    const desired = { name: 'qa', description: 'new', resourceSelector: undefined };
    expect(changedFields(desired, current, strict)).toEqual(['description']);
    expect(mergedBody(['name', 'description', 'resourceSelector', 'metadata'], current, desired)).toEqual({
      name: 'qa',
      description: 'new',
      resourceSelector: 'true',
      metadata: {},
    });
  });
});

describe('apply: reading a document', () => {
  it("turns the applier's agent spelling into one jobAgents entry", () => {
    const document = parseDocument(
      { type: 'deployment', name: 'API', slug: 'api', jobAgent: { ref: 'puller' }, jobAgentConfig: { x: 1 } },
      source,
    );
    expect(document).toMatchObject({
      type: 'Deployment',
      key: 'api',
      label: 'Deployment "api"',
      body: { jobAgents: [{ ref: 'puller', config: { x: 1 } }] },
    });
  });

  it("reads the provider's variable spellings", () => {
    const document = parseDocument(
      {
        type: 'Deployment',
        name: 'API',
        slug: 'api',
        variables: [
          {
            key: 'REGION',
            default_value: 'eu',
            values: [
              { priority: 2, literal_value: 'us', resource_selector: 'resource.kind == "x"' },
              { reference_value: { reference: 'resource', path: ['metadata', 'region'] } },
            ],
          },
        ],
      },
      source,
    );
    expect(document.type === 'Deployment' && document.variables).toEqual([
      {
        body: { key: 'REGION', defaultValue: 'eu' },
        values: [
          { priority: 2, value: 'us', resourceSelector: 'resource.kind == "x"' },
          {
            priority: 0,
            resourceSelector: null,
            reference: { reference: 'resource', path: ['metadata', 'region'] },
          },
        ],
      },
    ]);
  });

  it('names the file, the document and the field of every problem', () => {
    expect(() =>
      parseDocument(
        { type: 'Environment', name: 'qa', resourceSelector: 'resource.kind ==', colour: 'red' },
        source,
      ),
    ).toThrow(/^f\.yaml, document 3 \(Environment "qa"\): colour: unknown field; resourceSelector: /);
    expect(() => parseDocument({ type: 'JobAgent', name: 'a', agentType: 'carrier-pigeon' }, source)).toThrow(
      /agentType: /,
    );
    expect(() => parseDocument(['not', 'a', 'mapping'], source)).toThrow(/a mapping with a `type`/);
  });
});
