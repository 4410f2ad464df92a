import { renderTemplate, templateContext, TemplateError } from '../../domain/templates';

describe('push-agent templates', () => {
  const context = {
    job: { id: 'job-1' },
    version: { tag: '1.2.0' },
    resource: { identifier: 'web-1', metadata: { region: 'eu' } },
    variables: { REPLICAS: 3, LIMITS: { cpu: '1' }, TRICKY: 'a"\nb: c' },
  };

  it('fills string values from the release, as text, and keeps everything else as it is', () => {
    const rendered = renderTemplate(
      'name: "{{ resource.identifier }}-{{version.tag}}"\nreplicas: "{{ variables.REPLICAS }}"\nlimits: "{{ variables.LIMITS }}"\nport: 8080\ntags: ["{{ resource.metadata.region }}", fixed]\n',
      context,
    );
    expect(rendered).toEqual({
      name: 'web-1-1.2.0',
      replicas: '3',
      limits: '{"cpu":"1"}',
      port: 8080,
      tags: ['eu', 'fixed'],
    });
  });

  it('never lets a value change the structure of the document', () => {
    expect(renderTemplate('{"note": "{{ variables.TRICKY }}"}', context)).toEqual({ note: 'a"\nb: c' });
  });

  it('names an unknown placeholder, and refuses a template that is not one object', () => {
    expect(() => renderTemplate('name: "{{ resource.owner }}"', context)).toThrow(
      new TemplateError('the template refers to {{ resource.owner }}, which the context does not have'),
    );
    expect(() => renderTemplate('- a\n- b', context)).toThrow(/one YAML or JSON object/);
    expect(() => renderTemplate('a: [', context)).toThrow(/not valid YAML or JSON/);
  });

  it('renders sensitive variables but never the configuration\'s sealed values (docs/security.md "Credential binding")', () => {
    const sealed = (value: string) => ({ $sealed: `sealed:${value}` });
    const open = (tree: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(tree), (_key, value: unknown) =>
        typeof value === 'object' && value !== null && '$sealed' in value
          ? String((value as { $sealed: string }).$sealed).slice('sealed:'.length)
          : value,
      ) as Record<string, unknown>;
    const scope = templateContext(
      'job-1',
      {
        variables: { DB_PASSWORD: sealed('hunter2') },
        jobAgentConfig: { server_url: 'https://argo', api_key: sealed('argo-key'), nested: [sealed('deep')] },
      },
      open,
    );
    expect(
      renderTemplate('a: "{{ variables.DB_PASSWORD }}"\nb: "{{ jobAgentConfig.server_url }}"', scope),
    ).toEqual({
      a: 'hunter2',
      b: 'https://argo',
    });
    expect(() => renderTemplate('leak: "{{ jobAgentConfig.api_key }}"', scope)).toThrow(
      /\{\{ jobAgentConfig\.api_key \}\}, a sealed value: templates never render/,
    );
    const whole = renderTemplate('all: "{{ jobAgentConfig }}"', scope);
    expect(JSON.stringify(whole)).not.toMatch(/argo-key|deep/);
  });
});
