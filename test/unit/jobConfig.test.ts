import { deepMerge, mergeJobConfig } from '../../domain/jobConfig';

describe('job configuration', () => {
  it('merges objects key by key and replaces everything else', () => {
    expect(deepMerge({ a: { x: 1, y: 2 }, list: [1, 2], keep: true }, { a: { y: 3 }, list: [9] })).toEqual({
      a: { x: 1, y: 3 },
      list: [9],
      keep: true,
    });
  });

  it('takes the version first, then the deployment entry, variables, release context, and the agent last', () => {
    const merged = mergeJobConfig({
      agent: { ref: 'main', owner: 'agent-owner', token: 't' },
      releaseContext: {
        releaseId: 'r',
        deploymentSlug: 'api',
        environmentName: 'prod',
        resourceIdentifier: 'node',
        resourceName: 'node',
        versionTag: '1.0.0',
      },
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
});
