import { buildOpenApiDocument } from '../../api/openapi';
import { route, toFieldIssues } from '../../api/route';
import { CreateVersionBody } from '../../api/schemas/version';
import { DeploymentBody } from '../../api/schemas/deployment';
import { UpsertResourceBody } from '../../api/schemas/resource';
import { strictBody } from '../../api/strictBody';
import { z } from '../../api/schemas/zod';

/**
 * The strict copies of body schemas refuse unknown keys at any depth, and only those (docs/api.md
 * "Conventions").
 */
describe('strict request bodies', () => {
  const issues = (schema: z.ZodType, value: unknown) => {
    const result = strictBody(schema).safeParse(value);
    return result.success ? [] : toFieldIssues(result.error, 'body');
  };

  it('names a misspelled key with its full path, through arrays, unions, pipes and records', () => {
    const resource = { name: 'n', version: 'v1', kind: 'k' };
    expect(
      issues(UpsertResourceBody, { ...resource, variables: [{ key: 'A', value: 'x', sensitve: true }] }),
    ).toEqual([{ path: 'body.variables[0].sensitve', message: 'unknown field' }]);
    expect(
      issues(DeploymentBody, { name: 'd', slug: 'd', jobAgents: [{ ref: 'a', selectr: 'true' }] }),
    ).toEqual([{ path: 'body.jobAgents[0].selectr', message: 'unknown field' }]);
    const dependency = '0190aaaa-0000-7000-8000-000000000003';
    expect(
      issues(CreateVersionBody, {
        tag: '1.0',
        dependencies: { [dependency]: { versionSelector: 'true', note: 1 } },
      }),
    ).toContainEqual({ path: `body.dependencies.${dependency}.note`, message: 'unknown field' });
  });

  it('keeps free-form objects free-form: configuration, metadata, variable values', () => {
    const free = { anything: { nested: [{ deeper: true }] } };
    expect(
      issues(UpsertResourceBody, {
        name: 'n',
        version: 'v1',
        kind: 'k',
        config: free,
        metadata: { team: 'a' },
        variables: [{ key: 'A', value: free }],
      }),
    ).toEqual([]);
    expect(
      issues(DeploymentBody, { name: 'd', slug: 'd', jobAgent: { ref: 'a' }, jobAgentConfig: free }),
    ).toEqual([]);
    expect(issues(DeploymentBody, { name: 'd', slug: 'd', jobAgents: [{ ref: 'a', config: free }] })).toEqual(
      [],
    );
    const loose = z.looseObject({ id: z.number() });
    expect(issues(loose, { id: 1, extra: { any: 1 } })).toEqual([]);
  });

  it('parses as the schema does otherwise, each default a fresh value', () => {
    const body = { name: 'd', slug: 'd', jobAgents: [{ ref: 'a' }] };
    const first = strictBody(DeploymentBody).parse(body);
    expect(first).toEqual(DeploymentBody.parse(body));
    const second = strictBody(DeploymentBody).parse(body);
    expect(second.jobAgents[0]!.config).not.toBe(first.jobAgents[0]!.config);
  });

  it('leaves the schema the OpenAPI document is built from as it was', () => {
    const body = z.object({ outer: z.object({ inner: z.string() }) }).openapi('StrictnessProbe');
    const probe = route({
      method: 'post',
      path: '/probe',
      summary: 'probe',
      tags: ['Probe'],
      auth: 'none',
      body,
      responses: { 204: { description: 'done' } },
      handle: async () => ({ status: 204 }),
    });
    const document = buildOpenApiDocument([probe], 'test') as {
      components: { schemas: Record<string, { properties: Record<string, object> }> };
    };
    expect(JSON.stringify(document.components.schemas.StrictnessProbe)).not.toContain('additionalProperties');
    expect(body.safeParse({ outer: { inner: 'x', extra: 1 } }).success).toBe(true);
  });
});
