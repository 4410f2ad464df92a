import { celExpression } from '../../domain/celSchema';
import { NotFoundError } from '../../domain/errors';
import { parseReleaseTargetKey } from '../../domain/releaseTargets';
import type { Stores } from '../../application';
import type { TargetState } from '../../application/targetStates';
import { route } from '../route';
import { ifPresent, pageOf, pageQuery, pageResponse, WorkspaceParams } from '../schemas/common';
import { JobSchema, JobStatusInput, JobWithVerificationsSchema, toJob } from '../schemas/job';
import { ReleaseWithVersionSchema, toReleaseWithVersion } from '../schemas/release';
import { DeploymentVersionSchema, toDeploymentVersion } from '../schemas/version';
import { z } from '../schemas/zod';
import { withVerifications } from './jobs';
import {
  ReleaseTargetListQuery,
  ReleaseTargetParams,
  ReleaseTargetSchema,
  toReleaseTarget,
} from '../schemas/releaseTarget';
import { ExplainQuery, ExplanationSchema, VariablePreviewSchema } from '../schemas/explain';

const tags = ['Release targets'];

export const releaseTargetRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets',
    summary: 'List release targets, filtered by deployment, environment or resource',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: ReleaseTargetListQuery,
    responses: {
      200: { description: 'Release targets', schema: pageOf(ReleaseTargetSchema, 'ReleaseTargetPage') },
    },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.releaseTargets.list(params.workspaceId, filter, { limit, offset });
      return { status: 200, body: pageResponse(page, toReleaseTarget) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}',
    summary: 'Get a release target by its key {resourceId}-{environmentId}-{deploymentId}',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    responses: { 200: { description: 'The release target', schema: ReleaseTargetSchema } },
    async handle(ctx, { params }) {
      const ref = parseReleaseTargetKey(params.releaseTargetKey);
      if (!ref) throw new NotFoundError('release target', params.releaseTargetKey);
      const target = await ctx.state.stores.releaseTargets.get(
        params.workspaceId,
        ref,
        params.releaseTargetKey,
      );
      return { status: 200, body: toReleaseTarget(target) };
    },
  }),
];

function targetOf(key: string) {
  const ref = parseReleaseTargetKey(key);
  if (!ref) throw new NotFoundError('release target', key);
  return ref;
}

/** The target states with their releases as Ctrlplane shows them, and their latest jobs' verifications. */
async function presentStates(stores: Stores, states: TargetState[]) {
  const releases = states.flatMap((state) =>
    [state.desiredRelease, state.currentRelease].flatMap((r) => r ?? []),
  );
  const shown = new Map(
    (await stores.releases.shown(releases)).map((entry) => [entry.release.id, toReleaseWithVersion(entry)]),
  );
  const latest = await withVerifications(
    stores,
    states.flatMap((state) => (state.latestJob ? [state.latestJob] : [])),
  );
  return states.map((state) => ({
    releaseTarget: toReleaseTarget(state.target),
    ...ifPresent('desiredRelease', state.desiredRelease && shown.get(state.desiredRelease.id)),
    ...ifPresent('currentRelease', state.currentRelease && shown.get(state.currentRelease.id)),
    ...ifPresent(
      'latestJob',
      latest.find((entry) => entry.job.id === state.latestJob?.id),
    ),
  }));
}

/** A target's state: its desired and current releases and its latest job with its verifications, each absent while it has none. */
export const ReleaseTargetStateSchema = z
  .object({
    releaseTarget: ReleaseTargetSchema,
    desiredRelease: ReleaseWithVersionSchema.optional(),
    currentRelease: ReleaseWithVersionSchema.optional(),
    latestJob: JobWithVerificationsSchema.optional(),
  })
  .openapi('ReleaseTargetState');

/** In a list of states, Ctrlplane's shape: the target, and its state beside it with the latest job alone. */
const ReleaseTargetWithStateSchema = z
  .object({
    releaseTarget: ReleaseTargetSchema,
    state: z.object({
      desiredRelease: ReleaseWithVersionSchema.optional(),
      currentRelease: ReleaseWithVersionSchema.optional(),
      latestJob: JobSchema.optional(),
    }),
  })
  .openapi('ReleaseTargetWithState');

export const releaseTargetStateRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/state',
    summary: 'The desired release, the current release and the latest job (with verifications) of a target',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    responses: { 200: { description: 'The state', schema: ReleaseTargetStateSchema } },
    async handle(ctx, { params }) {
      const state = await ctx.state.stores.targetStates.get(
        params.workspaceId,
        targetOf(params.releaseTargetKey),
        params.releaseTargetKey,
      );
      return { status: 200, body: (await presentStates(ctx.state.stores, [state]))[0] };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/variables',
    summary: 'Preview the variables a version would get on the target',
    description:
      'Resolved as job creation resolves them: each with the source that won (the resource’s own, a deployment value with its priority and selector, a variable set, the default; a reference with its path), secrets masked, and the difference from the running release.',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    query: ExplainQuery,
    responses: { 200: { description: 'The preview', schema: VariablePreviewSchema } },
    async handle(ctx, { params, query }) {
      const preview = await ctx.state.stores.releaseTargets.previewVariables(
        params.workspaceId,
        targetOf(params.releaseTargetKey),
        params.releaseTargetKey,
        query.versionId,
      );
      return { status: 200, body: preview };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/explain',
    summary: 'Why the target is (not) on a version',
    description:
      'Every policy rule’s verdict with its reason and when it can change, the target’s slot (which release and jobs hold it) and what happens next, computed by the same gate code as the release workflow.',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    query: ExplainQuery,
    responses: { 200: { description: 'The explanation', schema: ExplanationSchema } },
    async handle(ctx, { params, query }) {
      const explanation = await ctx.state.stores.releaseTargets.explain(
        params.workspaceId,
        targetOf(params.releaseTargetKey),
        params.releaseTargetKey,
        query.versionId,
      );
      return { status: 200, body: explanation };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/desired-release',
    summary: 'The desired release of a target (absent while it has none)',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    responses: {
      200: {
        description: 'The desired release',
        schema: z.object({ desiredRelease: ReleaseWithVersionSchema.optional() }).openapi('DesiredRelease'),
      },
    },
    async handle(ctx, { params }) {
      const state = await ctx.state.stores.targetStates.get(
        params.workspaceId,
        targetOf(params.releaseTargetKey),
        params.releaseTargetKey,
      );
      const [shown] = await ctx.state.stores.releases.shown(
        state.desiredRelease ? [state.desiredRelease] : [],
      );
      return { status: 200, body: shown ? { desiredRelease: toReleaseWithVersion(shown) } : {} };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/eligible-versions',
    audit: false,
    summary: 'The versions that pass every policy rule on the target now',
    description:
      "Ready versions of the target's deployment whose policy rules (and dependencies) all pass now, newest first. " +
      '`filter` (CEL over `version`) narrows them and pages count after it; `excludeRuleIds` skips those rules.',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    query: pageQuery(),
    body: z
      .object({
        filter: celExpression('version').optional(),
        excludeRuleIds: z.array(z.uuid()).max(100).optional(),
      })
      .default({})
      .openapi('EligibleVersionsQuery'),
    responses: {
      200: {
        description: 'Eligible versions',
        schema: pageOf(DeploymentVersionSchema, 'EligibleVersionPage'),
      },
    },
    async handle(ctx, { params, query, body }) {
      const page = await ctx.state.stores.releaseTargets.eligibleVersions(
        params.workspaceId,
        targetOf(params.releaseTargetKey),
        params.releaseTargetKey,
        body,
        query,
      );
      return { status: 200, body: pageResponse(page, toDeploymentVersion) };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/release-targets/state',
    audit: false,
    summary: 'The states of the release targets of a deployment in an environment',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: pageQuery(),
    body: z.object({ deploymentId: z.uuid(), environmentId: z.uuid() }).openapi('ReleaseTargetStateQuery'),
    responses: {
      200: { description: 'States', schema: pageOf(ReleaseTargetWithStateSchema, 'ReleaseTargetStatePage') },
    },
    async handle(ctx, { params, query, body }) {
      const page = await ctx.state.stores.targetStates.forDeploymentAndEnvironment(
        params.workspaceId,
        body.deploymentId,
        body.environmentId,
        query,
      );
      const items = (await presentStates(ctx.state.stores, page.items)).map(
        ({ releaseTarget, latestJob, ...releases }) => ({
          releaseTarget,
          state: { ...releases, ...ifPresent('latestJob', latestJob?.job) },
        }),
      );
      return { status: 200, body: { ...page, items } };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/release-targets/{releaseTargetKey}/jobs',
    summary: 'The jobs of a release target, newest first',
    tags,
    auth: 'apiKey',
    params: ReleaseTargetParams,
    query: pageQuery().extend({ status: JobStatusInput.optional() }),
    responses: { 200: { description: 'Jobs', schema: pageOf(JobSchema, 'ReleaseTargetJobPage') } },
    async handle(ctx, { params, query }) {
      const ref = targetOf(params.releaseTargetKey);
      await ctx.state.stores.releaseTargets.get(params.workspaceId, ref, params.releaseTargetKey);
      const { limit, offset, status } = query;
      const page = await ctx.state.stores.jobs.list(
        params.workspaceId,
        { ...ref, status },
        { limit, offset },
        'desc',
      );
      return { status: 200, body: pageResponse(page, toJob) };
    },
  }),
];
