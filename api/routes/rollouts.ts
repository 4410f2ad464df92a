import type { RolloutControl } from '../../application/rollouts';
import { route } from '../route';
import {
  RolloutControlBody,
  RolloutJudgementBody,
  RolloutListSchema,
  RolloutParams,
  toRollouts,
} from '../schemas/rollout';

const tags = ['Rollouts'];
const ROLLOUT_PATH = '/workspaces/{workspaceId}/deployments/{deploymentId}/versions/{versionId}/rollout';

/** What each control does, as its route documents it. */
const CONTROLS: Record<RolloutControl, { summary: string; description: string }> = {
  pause: {
    summary: 'Pause a rollout in waves',
    description: 'No target is admitted until it resumes; the jobs that run go on. 409 unless it is running.',
  },
  resume: {
    summary: 'Resume a paused or halted rollout',
    description:
      'It admits targets again; after a halt, only the failures that come after the resume count toward the next one.',
  },
  abort: {
    summary: 'Abort a rollout in waves',
    description:
      'The targets it had not admitted are blocked for this version, and the releases whose jobs are only queued are cancelled; running jobs go on.',
  },
};

/** A version's rollouts in waves (docs/behaviour.md "Rolling out to a fleet"): read, paused, resumed, aborted. */
export const rolloutRoutes = [
  route({
    method: 'get',
    path: ROLLOUT_PATH,
    summary: 'The rollout of a version in waves',
    description:
      'One per waves rule that applies to the version’s targets: its state, the wave it is at, why its targets wait, ' +
      'each wave’s targets by state, its bake and its halt.',
    tags,
    auth: 'apiKey',
    params: RolloutParams,
    responses: { 200: { description: 'The rollouts', schema: RolloutListSchema } },
    async handle(ctx, { params }) {
      const rollouts = await ctx.state.stores.rollouts.forVersion(
        params.workspaceId,
        params.deploymentId,
        params.versionId,
      );
      return { status: 200, body: toRollouts(rollouts) };
    },
  }),
  route({
    method: 'post',
    path: `${ROLLOUT_PATH}/judgement`,
    summary: 'Judge the wave a rollout waits at',
    description:
      'For a wave with `manualJudgement`: continue lets it start; rollback aborts the rollout and rolls back the ' +
      'targets it took, as the rollback rule does. 403 for a key the wave does not name; 409 when no wave waits.',
    tags,
    auth: 'apiKey',
    params: RolloutParams,
    body: RolloutJudgementBody,
    audit: { record: 'rollout', action: 'judged' },
    responses: { 200: { description: 'The rollouts, as they now stand', schema: RolloutListSchema } },
    async handle(ctx, { params, body }) {
      const rollouts = await ctx.state.stores.rollouts.judge(
        params.workspaceId,
        params.deploymentId,
        params.versionId,
        ctx.state.principal!,
        body,
      );
      return { status: 200, body: toRollouts(rollouts) };
    },
  }),
  ...(Object.keys(CONTROLS) as RolloutControl[]).map((control) =>
    route({
      method: 'post',
      path: `${ROLLOUT_PATH}/${control}`,
      ...CONTROLS[control],
      tags,
      auth: 'apiKey',
      params: RolloutParams,
      body: RolloutControlBody,
      responses: { 200: { description: 'The rollouts, as they now stand', schema: RolloutListSchema } },
      async handle(ctx, { params, body }) {
        const rollouts = await ctx.state.stores.rollouts.control(
          params.workspaceId,
          params.deploymentId,
          params.versionId,
          control,
          body.reason,
        );
        return { status: 200, body: toRollouts(rollouts) };
      },
    }),
  ),
];
