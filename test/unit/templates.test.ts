import { renderTemplate, TemplateError } from '../../domain/templates';

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
});
