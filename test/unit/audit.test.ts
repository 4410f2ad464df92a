import { describeWrite, evaluationEvents, fieldNames, jobEvent } from '../../domain/audit';
import type { GateEvaluation } from '../../domain/gates';
import type { RuleEvaluation } from '../../domain/rules/evaluator';

const release = {
  id: 'r1',
  workspaceId: 'w1',
  deploymentId: 'd1',
  environmentId: 'e1',
  resourceId: 'x1',
  versionId: 'v1',
};

const evaluation = (
  decision: GateEvaluation['decision'],
  reason: string,
  rules: RuleEvaluation[],
): GateEvaluation => ({
  decision,
  reason,
  rules,
  evaluatedAt: '2026-11-26T00:00:00.000Z',
});

const approval: RuleEvaluation = {
  kind: 'anyApproval',
  policyId: 'p1',
  ruleId: 'a1',
  state: 'waiting',
  reason: '0 of 1 approvals',
};

describe('describeWrite (the audit event of an API write, docs/behaviour.md "Audit trail")', () => {
  it('names the collection’s record, the answer’s id and what the answer says was done', () => {
    expect(
      describeWrite({
        method: 'post',
        path: '/workspaces/{workspaceId}/systems',
        params: { workspaceId: 'w1' },
        body: { name: 'Payments', description: undefined },
        response: { id: 's1', message: 'System created' },
      }),
    ).toEqual({ action: 'system.created', record: { type: 'system', id: 's1' }, changes: ['name'] });
    expect(
      describeWrite({
        method: 'put',
        path: '/workspaces/{workspaceId}/resources/identifier/{identifier}',
        params: { workspaceId: 'w1', identifier: 'node-1' },
        body: { name: 'node-1', kind: 'service' },
        response: { id: 'res1', message: 'Resource updated' },
      }),
    ).toMatchObject({ action: 'resource.updated', record: { type: 'resource', id: 'res1' } });
  });

  it('takes a deleted record’s id from its path, and a verb’s record from the path before it', () => {
    expect(
      describeWrite({
        method: 'delete',
        path: '/workspaces/{workspaceId}/holds/{holdId}',
        params: { workspaceId: 'w1', holdId: 'h1' },
        body: undefined,
        response: { id: 'h1', message: 'gone' },
      }),
    ).toEqual({ action: 'hold.deleted', record: { type: 'hold', id: 'h1' }, changes: [] });
    expect(
      describeWrite({
        method: 'post',
        path: '/workspaces/{workspaceId}/releases/{releaseId}/approve',
        params: { workspaceId: 'w1', releaseId: 'r1' },
        body: { reason: 'ok' },
        response: { id: 'approval-1' },
      }),
    ).toEqual({ action: 'release.approved', record: { type: 'release', id: 'r1' }, changes: ['reason'] });
  });

  it('follows a route’s own naming and ties a deployment’s writes to it', () => {
    expect(
      describeWrite({
        method: 'put',
        path: '/workspaces/{workspaceId}/deployments/{deploymentId}/variables/{variableId}',
        params: { workspaceId: 'w1', deploymentId: 'd1', variableId: 'var1' },
        body: { key: 'LOG_LEVEL' },
        response: { id: 'var1', message: 'Variable created' },
      }),
    ).toEqual({
      action: 'variable.created',
      record: { type: 'variable', id: 'var1' },
      changes: ['key'],
      deploymentId: 'd1',
    });
    expect(
      describeWrite({
        method: 'put',
        path: '/workspaces/{workspaceId}/systems/{systemId}/deployments/{deploymentId}',
        params: { workspaceId: 'w1', systemId: 's1', deploymentId: 'd1' },
        body: undefined,
        response: { id: 's1' },
        audit: { record: 'system', action: 'system.deployment_linked' },
      }),
    ).toMatchObject({ action: 'system.deployment_linked', record: { type: 'system', id: 's1' } });
  });

  it('keeps field names only, never values', () => {
    expect(fieldNames({ token: 'secret', b: 1, skipped: undefined })).toEqual(['b', 'token']);
    expect(fieldNames([1, 2])).toEqual([]);
    expect(fieldNames('text')).toEqual([]);
  });
});

describe('evaluationEvents (what a release’s gates newly decided)', () => {
  it('says a release waits, and that an approval is asked, once', () => {
    const waiting = evaluation('wait', 'waiting for 1 approval', [approval]);
    const first = evaluationEvents(release, null, waiting);
    expect(first.map((event) => event.action)).toEqual(['release.waiting', 'approval.requested']);
    expect(first[0]!.details).toMatchObject({
      reason: 'waiting for 1 approval',
      rule: { kind: 'anyApproval' },
    });
    expect(evaluationEvents(release, waiting, waiting)).toEqual([]);
  });

  it('says a skip let a rule pass and a hold came to bear', () => {
    const waiting = evaluation('wait', 'waiting for 1 approval', [approval]);
    const skipped = evaluation('wait', 'held by hold h1', [
      { ...approval, state: 'passed', reason: 'skipped by ops', skipId: 'skip-1' },
      { kind: 'hold', ruleId: 'h1', state: 'waiting', reason: 'held by ops: incident' },
    ]);
    expect(evaluationEvents(release, waiting, skipped).map((event) => [event.action, event.details])).toEqual(
      [
        ['release.waiting', expect.objectContaining({ reason: 'held by hold h1' })],
        ['policy_skip.applied', expect.objectContaining({ skipId: 'skip-1' })],
        ['hold.applied', expect.objectContaining({ holdId: 'h1' })],
      ],
    );
    const proceeding = evaluation('proceed', 'all rules passed', []);
    expect(evaluationEvents(release, skipped, proceeding)).toEqual([]);
  });
});

describe('jobEvent', () => {
  it('is a status change when the status moved, an update otherwise', () => {
    const job = { id: 'j1', workspaceId: 'w1', status: 'successful', message: 'done', releaseId: 'r1' };
    expect(jobEvent(job, 'in_progress', ['status']).action).toBe('job.status_changed');
    expect(jobEvent(job, 'successful', ['message'])).toMatchObject({
      action: 'job.updated',
      details: { from: 'successful', to: 'successful', message: 'done', releaseId: 'r1' },
    });
  });
});
