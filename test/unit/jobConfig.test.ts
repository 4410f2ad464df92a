import { deepMerge, mergeJobConfig } from '../../domain/jobConfig';

describe('job configuration', () => {
  const releaseContext = {
    releaseId: 'r',
    deploymentSlug: 'api',
    environmentName: 'prod',
    resourceIdentifier: 'node',
    resourceName: 'node',
    versionTag: '1.0.0',
  };

  it('merges objects key by key and replaces everything else', () => {
    expect(deepMerge({ a: { x: 1, y: 2 }, list: [1, 2], keep: true }, { a: { y: 3 }, list: [9] })).toEqual({
      a: { x: 1, y: 3 },
      list: [9],
      keep: true,
    });
  });

  it('takes the version first, then the deployment entry, variables, release context, and the agent last', () => {
    const merged = mergeJobConfig({
      agentType: 'github-app',
      agent: { ref: 'main', owner: 'agent-owner', token: 't' },
      releaseContext,
      variables: { environmentName: 'from-variable', owner: 'variable-owner', replicas: 2 },
      deploymentEntry: { owner: 'entry-owner', repo: 'shop', ref: 'release' },
      version: { ref: 'v1.0.0' },
    });
    expect(merged).toEqual({
      ref: 'v1.0.0',
      owner: 'entry-owner',
      repo: 'shop',
      token: 't',
      replicas: 2,
      environmentName: 'from-variable',
      releaseId: 'r',
      deploymentSlug: 'api',
      resourceIdentifier: 'node',
      resourceName: 'node',
      versionTag: '1.0.0',
    });
  });

  it('takes an agent\'s endpoint and credentials from the agent record alone (docs/security.md "Agents")', () => {
    const argo = mergeJobConfig({
      agentType: 'argo-cd',
      agent: { server_url: 'https://argo.internal', api_key: 'stored' },
      releaseContext,
      variables: { api_key: 'from-variable' },
      deploymentEntry: { server_url: 'https://attacker.example', template: 'x' },
      version: { server_url: 'https://attacker.example/v' },
    });
    expect(argo).toMatchObject({ server_url: 'https://argo.internal', api_key: 'stored', template: 'x' });

    const tfe = mergeJobConfig({
      agentType: 'tfe',
      agent: { token: 'stored', organization: 'acme' },
      releaseContext,
      variables: {},
      deploymentEntry: {},
      version: { address: 'https://attacker.example', organization: 'other' },
    });
    // Without an address of its own the agent uses the default service, never the version's.
    expect(tfe).not.toHaveProperty('address');
    expect(tfe).toMatchObject({ token: 'stored', organization: 'other' });

    const github = mergeJobConfig({
      agentType: 'github-app',
      agent: { app_id: 1, installation_id: 2, private_key: 'k' },
      releaseContext,
      variables: {},
      deploymentEntry: { base_url: 'https://attacker.example', token: 'mine', installation_id: 3 },
      version: {},
    });
    expect(github).toMatchObject({ app_id: 1, installation_id: 2, private_key: 'k' });
    expect(github).not.toHaveProperty('base_url');
    expect(github).not.toHaveProperty('token');
  });
});
