import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { REDACTED } from './recordFixtures';
import type { WorkspaceAccess } from './records';
import type { TestStack } from './stack';

/**
 * The table behind test/integration/records/contract.test.ts: every operation on the workspace records
 * (systems and their links, environments, deployments, versions and their dependencies, resources and
 * their variables, job agents, deployment variables and their values, policies and their skips), with what it takes to
 * send it and what it writes. The test derives from each row: 401 without a key, 404 on another
 * workspace's records, 409 for a duplicate, each writing nothing; and a control that the row's request,
 * sent with the key on one's own records, succeeds and writes its tables (so the refusals are refusals).
 */

/** The records of one workspace an operation's path or body can name. */
export interface Records {
  workspaceId: string;
  system: string;
  environment: string;
  /** Not linked to `system` (`environment` is). */
  spareEnvironment: string;
  environmentName: string;
  /** Linked to `system`, with a sealed agent token; `version`, `variable` and `value` are its. */
  deployment: string;
  /** Not linked to `system`; `version` depends on it. */
  spareDeployment: string;
  deploymentName: string;
  /** A building version of `deployment`. */
  version: string;
  resource: string;
  identifier: string;
  /** A `tfe` agent with a sealed token. */
  jobAgent: string;
  variable: string;
  value: string;
  policy: string;
  /** The approval rule of `policy`. */
  policyRule: string;
  /** A skip of `policyRule` for `version`. */
  policySkip: string;
  /** A block hold that covers no target. */
  hold: string;
  /** A webhook of an event the seeded records never cause. */
  webhook: string;
  /** What a second record of each kind holds already: a write that takes one of these is a duplicate. */
  taken: {
    systemName: string;
    systemSlug: string;
    environmentName: string;
    deploymentName: string;
    deploymentSlug: string;
    /** A version of `deployment`. */
    versionTag: string;
    identifier: string;
    jobAgentName: string;
    /** A variable of `deployment`. */
    variableKey: string;
    policyName: string;
  };
}

export type Ref = Exclude<keyof Records, 'workspaceId' | 'taken'>;

export type Table =
  | 'system'
  | 'system_deployment'
  | 'system_environment'
  | 'environment'
  | 'deployment'
  | 'deployment_version'
  | 'deployment_version_dependency'
  | 'resource'
  | 'resource_variable'
  | 'job_agent'
  | 'deployment_variable'
  | 'deployment_variable_value'
  | 'policy'
  | 'policy_skip'
  | 'hold'
  | 'webhook';

export interface Duplicate {
  /** What the body takes that another record holds: `slug`, `name`. */
  what: string;
  body: (r: Records) => object;
  /** What the problem's `detail` says: the taken value, where it names it. */
  detail: (r: Records) => string;
  code: 'duplicate' | 'duplicate_name';
}

export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /**
   * Under `/v1/workspaces/{workspaceId}` unless it starts with `/v1`. `{ref}` is the record of that name
   * (see `Records`); `{new}` a fresh uuid each time.
   */
  path: string;
  /** A valid body, fresh each call (unique names): sent as is, the request succeeds on one's own records. */
  body?: (r: Records) => object;
  /** Records the body names (the path's are read from it). */
  bodyRefs?: Ref[];
  /**
   * The records that, taken from another workspace, make the request answer 404 (default: every one it
   * names). A PUT by identifier names no record of another workspace: it creates one of this workspace's.
   */
  foreignRefs?: Ref[];
  /** The status of success. */
  status: number;
  /** The tables a success writes (each one changes); none for a read. */
  writes: Table[];
  duplicates?: Duplicate[];
  /** The record, or page of records, a success answers, whose required fields are checked. */
  answers?: RecordKind;
}

/**
 * The fields the specification marks required in a record's answers (SPEC.md, "Resources and their
 * fields": those a caller must give or the service assigns), per record kind.
 */
export const REQUIRED_FIELDS = {
  deployment: ['id', 'name', 'slug'],
  version: ['id', 'deploymentId', 'tag', 'createdAt'],
  resource: [
    'id',
    'name',
    'version',
    'kind',
    'identifier',
    'config',
    'metadata',
    'createdAt',
    'updatedAt',
    'deletedAt',
    'workspaceId',
  ],
} as const;

export type RecordKind = keyof typeof REQUIRED_FIELDS;

let sequence = 0;
/** A name no other record of the test file has. */
export const fresh = (prefix: string) => `${prefix}-${++sequence}`;
const deploymentBody = () => {
  const name = fresh('deployment');
  return { name, slug: name };
};
/** A secret sent back as shown keeps the stored one: over another workspace's record, it must not. */
const keepToken = { config: { token: REDACTED } };

export const OPERATIONS: Operation[] = [
  // Systems and their links
  {
    method: 'post',
    path: '/systems',
    body: () => ({ name: fresh('System') }),
    status: 202,
    writes: ['system'],
    duplicates: [
      {
        what: 'slug',
        body: (r) => ({ name: 'Copy', slug: r.taken.systemSlug }),
        detail: (r) => r.taken.systemSlug,
        code: 'duplicate',
      },
    ],
  },
  { method: 'get', path: '/systems', status: 200, writes: [] },
  { method: 'get', path: '/systems/{system}', status: 200, writes: [] },
  ...(['{new}', '{system}'] as const).map((id): Operation => ({
    method: 'put',
    path: `/systems/${id}`,
    body: () => ({ name: fresh('System') }),
    status: 202,
    writes: ['system'],
    duplicates: [
      {
        what: 'slug (derived from the name)',
        body: (r) => ({ name: r.taken.systemName }),
        detail: (r) => r.taken.systemSlug,
        code: 'duplicate',
      },
    ],
  })),
  { method: 'delete', path: '/systems/{system}', status: 202, writes: ['system'] },
  {
    method: 'put',
    path: '/systems/{system}/deployments/{spareDeployment}',
    status: 202,
    writes: ['system_deployment'],
  },
  { method: 'get', path: '/systems/{system}/deployments/{deployment}', status: 200, writes: [] },
  {
    method: 'delete',
    path: '/systems/{system}/deployments/{deployment}',
    status: 202,
    writes: ['system_deployment'],
  },
  {
    method: 'put',
    path: '/systems/{system}/environments/{spareEnvironment}',
    status: 202,
    writes: ['system_environment'],
  },
  { method: 'get', path: '/systems/{system}/environments/{environment}', status: 200, writes: [] },
  {
    method: 'delete',
    path: '/systems/{system}/environments/{environment}',
    status: 202,
    writes: ['system_environment'],
  },

  // Environments
  ...(['post /environments', 'put /environments/{new}', 'put /environments/{environment}'] as const).map(
    (operation): Operation => ({
      method: operation.startsWith('post') ? 'post' : 'put',
      path: operation.split(' ')[1]!,
      body: () => ({ name: fresh('env'), resourceSelector: 'resource.kind == "service"' }),
      status: 202,
      writes: ['environment'],
      duplicates: [
        {
          what: 'name',
          body: (r) => ({ name: r.taken.environmentName }),
          detail: (r) => r.taken.environmentName,
          code: 'duplicate',
        },
      ],
    }),
  ),
  { method: 'get', path: '/environments', status: 200, writes: [] },
  { method: 'get', path: '/environments/name/{environmentName}', status: 200, writes: [] },
  { method: 'get', path: '/environments/{environment}', status: 200, writes: [] },
  { method: 'delete', path: '/environments/{environment}', status: 202, writes: ['environment'] },

  // Deployments
  ...(['post /deployments', 'put /deployments/{new}', 'put /deployments/{deployment}'] as const).map(
    (operation): Operation => ({
      method: operation.startsWith('post') ? 'post' : 'put',
      path: operation.split(' ')[1]!,
      // Over an existing deployment, its sealed token sent back as shown.
      body: () => ({
        ...deploymentBody(),
        ...(operation.endsWith('{deployment}') ? { jobAgents: [{ ref: 'github', ...keepToken }] } : {}),
      }),
      status: 202,
      writes: ['deployment'],
      answers: 'deployment',
      duplicates: [
        {
          what: 'slug',
          body: (r) => ({ name: fresh('Copy'), slug: r.taken.deploymentSlug }),
          detail: (r) => r.taken.deploymentSlug,
          code: 'duplicate',
        },
        {
          what: 'name',
          body: (r) => ({ name: r.taken.deploymentName, slug: fresh('copy') }),
          detail: (r) => r.taken.deploymentName,
          code: 'duplicate_name',
        },
      ],
    }),
  ),
  { method: 'get', path: '/deployments', status: 200, writes: [], answers: 'deployment' },
  {
    method: 'get',
    path: '/deployments/name/{deploymentName}',
    status: 200,
    writes: [],
    answers: 'deployment',
  },
  { method: 'get', path: '/deployments/{deployment}', status: 200, writes: [], answers: 'deployment' },
  { method: 'delete', path: '/deployments/{deployment}', status: 202, writes: ['deployment'] },

  // Versions and their dependencies
  {
    method: 'post',
    path: '/deployments/{deployment}/versions',
    body: () => ({ tag: fresh('v'), status: 'building' }),
    status: 200,
    writes: ['deployment_version'],
    answers: 'version',
    duplicates: [
      {
        what: 'tag',
        body: (r) => ({ tag: r.taken.versionTag }),
        detail: (r) => r.taken.versionTag,
        code: 'duplicate',
      },
    ],
  },
  { method: 'get', path: '/deployments/{deployment}/versions', status: 200, writes: [], answers: 'version' },
  ...(['/deployment-versions/{version}', '/deploymentversions/{version}'] as const).flatMap(
    (path): Operation[] => [
      { method: 'get', path, status: 200, writes: [] },
      {
        method: 'patch',
        path,
        body: () => ({ status: path.startsWith('/deployment-') ? 'ready' : 'failed' }),
        status: 202,
        writes: ['deployment_version'],
        duplicates: [
          {
            what: 'tag',
            body: (r) => ({ tag: r.taken.versionTag, status: 'ready' }),
            detail: (r) => r.taken.versionTag,
            code: 'duplicate',
          },
        ],
      },
    ],
  ),
  { method: 'get', path: '/deployment-versions/{version}/dependencies', status: 200, writes: [] },
  {
    method: 'put',
    path: '/deployment-versions/{version}/dependencies/{spareDeployment}',
    body: () => ({ versionSelector: `version.tag != "${fresh('tag')}"` }),
    status: 202,
    writes: ['deployment_version_dependency'],
  },
  {
    method: 'delete',
    path: '/deployment-versions/{version}/dependencies/{spareDeployment}',
    status: 202,
    writes: ['deployment_version_dependency'],
  },

  // Resources and their variables
  { method: 'get', path: '/resources', status: 200, writes: [], answers: 'resource' },
  { method: 'get', path: '/resources/{resource}', status: 200, writes: [], answers: 'resource' },
  { method: 'delete', path: '/resources/{resource}', status: 202, writes: ['resource'] },
  ...(['/resources/identifier/new-{new}', '/resources/identifier/{identifier}'] as const).map(
    (path): Operation => ({
      method: 'put',
      path,
      body: () => ({ name: fresh('Resource'), version: 'v1', kind: 'service' }),
      // Identifiers are the workspace's own: another workspace's is only a new one here.
      foreignRefs: [],
      status: 202,
      writes: ['resource'],
      answers: 'resource',
    }),
  ),
  { method: 'get', path: '/resources/identifier/{identifier}', status: 200, writes: [], answers: 'resource' },
  { method: 'delete', path: '/resources/identifier/{identifier}', status: 200, writes: ['resource'] },
  { method: 'get', path: '/resources/identifier/{identifier}/variables', status: 200, writes: [] },
  {
    method: 'patch',
    path: '/resources/identifier/{identifier}/variables',
    body: () => ({ region: fresh('region') }),
    status: 202,
    writes: ['resource_variable'],
  },
  {
    method: 'patch',
    path: '/v1/resources/{resource}',
    body: () => ({ name: fresh('Renamed') }),
    status: 200,
    writes: ['resource'],
    answers: 'resource',
    duplicates: [
      {
        what: 'identifier',
        body: (r) => ({ identifier: r.taken.identifier, name: 'Clash' }),
        detail: () => 'already has that identifier',
        code: 'duplicate',
      },
    ],
  },

  // Job agents
  { method: 'get', path: '/job-agents', status: 200, writes: [] },
  { method: 'get', path: '/job-agents/{jobAgent}', status: 200, writes: [] },
  ...(['{new}', '{jobAgent}'] as const).map((id): Operation => ({
    method: 'put',
    path: `/job-agents/${id}`,
    // Over an existing agent, its sealed token sent back as shown.
    body: () => ({ name: fresh('agent'), type: 'tfe', ...(id === '{new}' ? {} : keepToken) }),
    status: 202,
    writes: ['job_agent'],
    duplicates: [
      {
        what: 'name',
        body: (r) => ({ name: r.taken.jobAgentName, type: 'tfe', config: {} }),
        detail: (r) => r.taken.jobAgentName,
        code: 'duplicate',
      },
    ],
  })),
  { method: 'delete', path: '/job-agents/{jobAgent}', status: 202, writes: ['job_agent'] },

  // Deployment variables and their values, nested and by alias
  { method: 'get', path: '/deployments/{deployment}/variables', status: 200, writes: [] },
  ...(
    [
      ['/deployments/{deployment}/variables/{new}', false],
      ['/deployments/{deployment}/variables/{variable}', false],
      ['/deployment-variables/{new}', true],
      ['/deployment-variables/{variable}', true],
    ] as const
  ).map(([path, alias]): Operation => ({
    method: 'put',
    path,
    body: (r) => ({ ...(alias ? { deploymentId: r.deployment } : {}), key: fresh('KEY') }),
    bodyRefs: alias ? ['deployment'] : [],
    status: 202,
    writes: ['deployment_variable'],
    duplicates: [
      {
        what: 'key',
        body: (r) => ({ ...(alias ? { deploymentId: r.deployment } : {}), key: r.taken.variableKey }),
        detail: (r) => r.taken.variableKey,
        code: 'duplicate',
      },
    ],
  })),
  ...(
    ['/deployments/{deployment}/variables/{variable}', '/deployment-variables/{variable}'] as const
  ).flatMap((path): Operation[] => [
    { method: 'get', path, status: 200, writes: [] },
    { method: 'delete', path, status: 202, writes: ['deployment_variable'] },
  ]),
  ...(
    [
      ['/deployments/{deployment}/variables/{variable}/values/{new}', false],
      ['/deployments/{deployment}/variables/{variable}/values/{value}', false],
      ['/deployment-variable-values/{new}', true],
      ['/deployment-variable-values/{value}', true],
    ] as const
  ).map(([path, alias]): Operation => ({
    method: 'put',
    path,
    body: (r) => ({ ...(alias ? { deploymentVariableId: r.variable } : {}), priority: 1, value: fresh('x') }),
    bodyRefs: alias ? ['variable'] : [],
    status: 202,
    writes: ['deployment_variable_value'],
  })),
  ...(
    [
      '/deployments/{deployment}/variables/{variable}/values/{value}',
      '/deployment-variable-values/{value}',
    ] as const
  ).flatMap((path): Operation[] => [
    { method: 'get', path, status: 200, writes: [] },
    { method: 'delete', path, status: 202, writes: ['deployment_variable_value'] },
  ]),

  // Policies
  ...(['post /policies', 'put /policies/{new}', 'put /policies/{policy}'] as const).map(
    (operation): Operation => ({
      method: operation.startsWith('post') ? 'post' : 'put',
      path: operation.split(' ')[1]!,
      body: () => ({ name: fresh('Policy'), rules: [{ anyApproval: { minApprovals: 1 } }] }),
      status: 202,
      writes: ['policy'],
      duplicates: [
        {
          what: 'name',
          body: (r) => ({ name: r.taken.policyName }),
          detail: (r) => r.taken.policyName,
          code: 'duplicate',
        },
      ],
    }),
  ),
  { method: 'get', path: '/policies', status: 200, writes: [] },
  { method: 'get', path: '/policies/{policy}', status: 200, writes: [] },
  { method: 'delete', path: '/policies/{policy}', status: 202, writes: ['policy'] },

  // Policy skips
  {
    method: 'post',
    path: '/policy-skips',
    body: (r) => ({
      ruleId: r.policyRule,
      versionId: r.version,
      environmentId: r.environment,
      resourceId: r.resource,
      reason: fresh('skip'),
    }),
    bodyRefs: ['policyRule', 'version', 'environment', 'resource'],
    status: 201,
    writes: ['policy_skip'],
  },
  { method: 'get', path: '/policy-skips', status: 200, writes: [] },
  { method: 'get', path: '/policy-skips/{policySkip}', status: 200, writes: [] },
  { method: 'delete', path: '/policy-skips/{policySkip}', status: 200, writes: ['policy_skip'] },
  {
    method: 'post',
    path: '/holds',
    body: () => ({
      selector: `resource.name == "${fresh('nothing')}"`,
      effect: 'block',
      reason: fresh('hold'),
    }),
    status: 201,
    writes: ['hold'],
  },
  { method: 'get', path: '/holds', status: 200, writes: [] },
  { method: 'get', path: '/deployments/{deployment}/metrics/dora', status: 200, writes: [] },
  { method: 'get', path: '/holds/{hold}', status: 200, writes: [] },
  { method: 'delete', path: '/holds/{hold}', status: 200, writes: ['hold'] },
  // Webhooks and the audit trail
  {
    method: 'post',
    path: '/webhooks',
    body: () => ({
      url: 'https://hooks.example.com/contract',
      events: ['hold.applied'],
      secret: fresh('secret-0123456789'),
    }),
    status: 201,
    writes: ['webhook'],
  },
  { method: 'get', path: '/webhooks', status: 200, writes: [] },
  { method: 'get', path: '/webhooks/{webhook}', status: 200, writes: [] },
  {
    method: 'put',
    path: '/webhooks/{webhook}',
    body: () => ({ events: ['hold.applied', 'lease.expired'] }),
    status: 200,
    writes: ['webhook'],
  },
  { method: 'get', path: '/webhooks/{webhook}/deliveries', status: 200, writes: [] },
  { method: 'delete', path: '/webhooks/{webhook}', status: 202, writes: ['webhook'] },
  { method: 'get', path: '/audit-events', status: 200, writes: [] },
];

/** `METHOD /path`, as the tests name an operation. */
export const describeOperation = (op: Operation) => `${op.method.toUpperCase()} ${op.path}`;

/** The records an operation names, in its path and its body. */
export function refsOf(op: Operation): Ref[] {
  const inPath = [...op.path.matchAll(/\{(\w+)\}/g)]
    .map((match) => match[1]!)
    .filter((name) => name !== 'new');
  return [...(inPath as Ref[]), ...(op.bodyRefs ?? [])];
}

/** The operation's request for `records`, in `workspaceId`, with `auth` (none: without a key). */
export function send(
  stack: TestStack,
  op: Operation,
  records: Records,
  workspaceId: string,
  auth?: WorkspaceAccess['auth'],
): PromiseLike<Response> {
  const filled = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(name === 'new' ? randomUUID() : records[name as Ref]),
  );
  const url = op.path.startsWith('/v1') ? filled : `/v1/workspaces/${workspaceId}${filled}`;
  let request = stack.http[op.method](url);
  if (auth) request = request.set(auth);
  return op.body ? request.send(op.body(records)) : request;
}
