import { ValidationError } from '../../domain/errors';
import {
  checkInputDeclarations,
  MAX_RUN_JOBS,
  planRunbookRun,
  RESOURCE_SELECTOR_INPUT,
  resolveRunInputs,
  type RunAgent,
  type RunbookInputDeclaration,
} from '../../domain/runbookRuns';
import { runActions } from '../../domain/runbookRunProgress';

const declarations: RunbookInputDeclaration[] = [
  { key: 'reason', type: 'string' },
  { key: 'count', type: 'number', default: 2 },
  { key: 'targets', type: 'array', selector: { entityType: 'resource', default: 'resource.kind == "Db"' } },
];

const agents: RunAgent[] = [
  { id: 'a1', name: 'runner', type: 'test-runner', config: { status: 'successful' } },
  { id: 'a2', name: 'argo', type: 'argo-cd', config: { server_url: 'https://argo.example', api_key: 'tok' } },
];

const resource = (name: string, tier: string) => ({
  id: `r-${name}`,
  name,
  identifier: name,
  kind: 'Db',
  version: 'v1',
  metadata: { tier },
  config: {},
});

function issuesOf(run: () => unknown): { path: string; message: string }[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error.issues;
    throw error;
  }
  throw new Error('expected a ValidationError');
}

describe('runbook run inputs', () => {
  it('fills defaults and keeps selector inputs as their expression', () => {
    expect(resolveRunInputs(declarations, { reason: 'audit' })).toEqual({
      values: { reason: 'audit', count: 2, targets: 'resource.kind == "Db"' },
      selectors: [
        { key: 'targets', entityType: 'resource', expression: 'resource.kind == "Db"', replacesValue: true },
      ],
    });
  });

  it('takes a string input keyed resourceSelector as the fan-out, keeping its expression (none when blank)', () => {
    const fanOut: RunbookInputDeclaration[] = [
      { key: RESOURCE_SELECTOR_INPUT, type: 'string', default: 'resource.kind == "Db"' },
    ];
    expect(resolveRunInputs(fanOut, {})).toEqual({
      values: { resourceSelector: 'resource.kind == "Db"' },
      selectors: [
        {
          key: 'resourceSelector',
          entityType: 'resource',
          expression: 'resource.kind == "Db"',
          replacesValue: false,
        },
      ],
    });
    expect(resolveRunInputs(fanOut, { resourceSelector: '  ' })).toEqual({
      values: { resourceSelector: '  ' },
      selectors: [],
    });
    expect(issuesOf(() => resolveRunInputs(fanOut, { resourceSelector: '((( not valid' }))).toEqual([
      {
        path: 'body.inputs.resourceSelector',
        message: expect.stringMatching(/^invalid CEL: line 1, column/),
      },
    ]);
    // Another string input is any text.
    expect(resolveRunInputs([{ key: 'note', type: 'string' }], { note: '((( fine' }).selectors).toEqual([]);
  });

  it('refuses missing, mistyped and undeclared inputs, naming each', () => {
    expect(
      issuesOf(() => resolveRunInputs(declarations, { count: 'two', extra: 1, targets: 'resource.' })),
    ).toEqual(
      expect.arrayContaining([
        { path: 'body.inputs.extra', message: 'the workflow declares no such input' },
        { path: 'body.inputs.reason', message: 'required: the input has no default' },
        { path: 'body.inputs.count', message: 'must be a number' },
        expect.objectContaining({
          path: 'body.inputs.targets',
          message: expect.stringMatching(/^invalid CEL/),
        }),
      ]),
    );
  });

  it('checks declarations: duplicate keys and defaults of the wrong type', () => {
    expect(
      checkInputDeclarations([
        { key: 'a', type: 'string' },
        { key: 'a', type: 'boolean', default: 'yes' as unknown as boolean },
      ]),
    ).toEqual([
      { path: 'body.inputs[1].key', message: 'input a is declared twice' },
      { path: 'body.inputs[1].default', message: 'must be a boolean' },
    ]);
    expect(
      checkInputDeclarations([{ key: RESOURCE_SELECTOR_INPUT, type: 'string', default: '((( not valid' }]),
    ).toEqual([{ path: 'body.inputs[0].default', message: expect.stringMatching(/^invalid CEL/) }]);
    expect(checkInputDeclarations([{ key: RESOURCE_SELECTOR_INPUT, type: 'string', default: '' }])).toEqual(
      [],
    );
  });
});

describe('planRunbookRun', () => {
  const base = {
    runbook: { id: 'w', name: 'Backup', slug: 'backup' },
    runId: 'run-1',
    inputs: { reason: 'audit' },
    agents,
  };

  it('makes one job per resource for each entry whose selector matches, filling its configuration', () => {
    const plans = planRunbookRun({
      ...base,
      resources: [resource('db1', 'gold'), resource('db2', 'silver')],
      entries: [
        {
          name: 'run',
          ref: 'runner',
          config: { message: '{{ resource.name }}: {{ inputs.reason }}' },
          selector: 'true',
        },
        {
          name: 'sync',
          ref: 'a2',
          config: { api_key: 'stolen' },
          selector: 'resource.metadata["tier"] == "gold"',
        },
      ],
    });
    expect(plans.map((plan) => [plan.agent.id, plan.resource?.name])).toEqual([
      ['a1', 'db1'],
      ['a2', 'db1'],
      ['a1', 'db2'],
    ]);
    expect(plans[0]!.config).toEqual({ status: 'successful', message: 'db1: audit' });
    // The agent's own credentials stay the agent's: an entry cannot replace them.
    expect(plans[1]!.config.api_key).toBe('tok');
    // Templates see the runbook as `workflow` (`{{ workflow.slug }}`, docs/api.md "Workflows").
    expect(plans[0]!.context).toMatchObject({
      workflow: { slug: 'backup' },
      run: { id: 'run-1' },
      resource: { name: 'db1' },
    });
  });

  it('makes one job per matching entry when the runbook selects no resources', () => {
    const plans = planRunbookRun({
      ...base,
      resources: null,
      entries: [
        { name: 'always', ref: 'a1', config: {}, selector: 'inputs.reason == "audit"' },
        { name: 'per resource', ref: 'a1', config: {}, selector: 'resource.name == "x"' },
      ],
    });
    expect(plans.map((plan) => plan.entry)).toEqual([0]);
  });

  it("routes by the entry's agent: its config under either spelling, never its secrets", () => {
    const routed = (selector: string) =>
      planRunbookRun({
        ...base,
        resources: [
          { ...resource('a', 'gold'), config: { argo: { server: 'https://argo.example' } } },
          { ...resource('b', 'gold'), config: { argo: { server: 'https://elsewhere.example' } } },
        ],
        entries: [{ name: 'sync', ref: 'argo', config: {}, selector }],
      }).map((plan) => plan.resource?.name);
    expect(routed('resource.config.argo.server.contains(jobAgent.config.serverUrl)')).toEqual(['a']);
    expect(routed('resource.config.argo.server == jobAgent.config.server_url')).toEqual(['a']);
    expect(routed('jobAgent.type == "argo-cd" && jobAgent.name == "argo"')).toEqual(['a', 'b']);
    // The agent's api_key is not readable: a selector cannot probe a credential.
    expect(routed('jobAgent.config.api_key == "tok" || jobAgent.config.apiKey == "tok"')).toEqual([]);
  });

  it('refuses a run naming a missing agent or an unknown template path, and one too large', () => {
    expect(
      issuesOf(() =>
        planRunbookRun({
          ...base,
          resources: null,
          entries: [
            { name: 'gone', ref: 'deleted', config: {}, selector: 'true' },
            { name: 'typo', ref: 'a1', config: { m: '{{ inputs.reasn }}' }, selector: 'true' },
          ],
        }),
      ),
    ).toEqual([
      { path: 'jobAgents[0].ref', message: 'no job agent deleted in this workspace' },
      { path: 'jobAgents[1].config', message: expect.stringContaining('inputs.reasn') },
    ]);
    const many = Array.from({ length: MAX_RUN_JOBS + 1 }, (_, i) => resource(`db${i}`, 'gold'));
    expect(() =>
      planRunbookRun({
        ...base,
        resources: many,
        entries: [{ name: 'x', ref: 'a1', config: {}, selector: 'true' }],
      }),
    ).toThrow(/at most 1000/);
  });
});

describe('runActions', () => {
  it('dispatches pending jobs once, follows pushed ones, and ends the run when every job has', () => {
    const jobs = [
      { id: 'j1', status: 'pending' as const, agentType: 'test-runner' as const },
      { id: 'j2', status: 'triggered' as const, agentType: 'argo-cd' as const },
      { id: 'j3', status: 'queued' as const, agentType: 'http-pull' as const },
    ];
    expect(runActions(jobs, new Set(['j1']))).toEqual({ dispatch: [], follow: ['j2'], outcome: 'running' });
    expect(runActions(jobs, new Set())).toMatchObject({ dispatch: ['j1'] });
    const ended = jobs.map((job) => ({ ...job, status: 'successful' as const }));
    expect(runActions(ended, new Set()).outcome).toBe('succeeded');
    expect(runActions([...ended, { id: 'j4', status: 'failure', agentType: null }], new Set()).outcome).toBe(
      'failed',
    );
    expect(runActions([], new Set()).outcome).toBe('succeeded');
  });
});
