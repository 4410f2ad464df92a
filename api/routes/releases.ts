import { route } from '../route';
import type { AppContext } from '../context';
import { pageOf, pageResponse, WorkspaceParams } from '../schemas/common';
import {
  ApprovalBody,
  ApprovalSchema,
  RedeployBody,
  ReleaseListQuery,
  ReleaseParams,
  ReleaseSchema,
  ReleaseWithVersionSchema,
  toApproval,
  toRelease,
  toReleaseWithVersion,
  UserApprovalRecordsBody,
} from '../schemas/release';
import { VersionParams } from '../schemas/version';
import { z } from '../schemas/zod';

const tags = ['Releases'];

function principalOf(ctx: AppContext) {
  return ctx.state.principal!;
}

function decisionRoute(status: 'approved' | 'rejected') {
  const verb = status === 'approved' ? 'approve' : 'reject';
  return route({
    method: 'post',
    path: `/workspaces/{workspaceId}/releases/{releaseId}/${verb}`,
    summary: `${verb[0]!.toUpperCase()}${verb.slice(1)} the release's version in its environment`,
    description:
      'Recorded per API key (one decision per key; a later one replaces it), with who and when. A rejection ' +
      'blocks the version in that environment. The releases waiting on it evaluate again.',
    tags,
    auth: 'apiKey',
    params: ReleaseParams,
    body: ApprovalBody,
    responses: { 202: { description: 'The recorded decision', schema: ApprovalSchema } },
    async handle(ctx, { params, body }) {
      const approval = await ctx.state.stores.releases.approve(
        params.workspaceId,
        params.releaseId,
        principalOf(ctx),
        {
          status,
          reason: body.reason,
        },
      );
      return { status: 202, body: toApproval(approval) };
    },
  });
}

export const releaseRoutes = [
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/releases',
    summary: 'List releases, oldest first',
    tags,
    auth: 'apiKey',
    params: WorkspaceParams,
    query: ReleaseListQuery,
    responses: { 200: { description: 'Releases', schema: pageOf(ReleaseSchema, 'ReleasePage') } },
    async handle(ctx, { params, query }) {
      const { limit, offset, ...filter } = query;
      const page = await ctx.state.stores.releases.list(params.workspaceId, filter, { limit, offset });
      return { status: 200, body: pageResponse(page, toRelease) };
    },
  }),
  route({
    method: 'get',
    path: '/workspaces/{workspaceId}/releases/{releaseId}',
    summary: 'Get a release, with its latest gate evaluation: why it waits',
    tags,
    auth: 'apiKey',
    params: ReleaseParams,
    responses: { 200: { description: 'The release', schema: ReleaseWithVersionSchema } },
    async handle(ctx, { params }) {
      return {
        status: 200,
        body: toReleaseWithVersion(
          await ctx.state.stores.releases.getShown(params.workspaceId, params.releaseId),
        ),
      };
    },
  }),
  decisionRoute('approved'),
  decisionRoute('rejected'),
  route({
    method: 'put',
    path: '/workspaces/{workspaceId}/deployment-versions/{deploymentVersionId}/user-approval-records',
    summary: "Record the caller's approval or rejection of a version for some environments",
    tags,
    auth: 'apiKey',
    params: VersionParams,
    body: UserApprovalRecordsBody,
    responses: {
      202: {
        description: 'The recorded decisions',
        schema: z
          .object({
            id: z.uuid().openapi({ description: 'The version' }),
            message: z.string(),
            records: z.array(ApprovalSchema),
          })
          .openapi('UserApprovalRecordsAccepted'),
      },
    },
    async handle(ctx, { params, body }) {
      const records = await ctx.state.stores.releases.recordApprovals(
        params.workspaceId,
        params.deploymentVersionId,
        body.environmentIds,
        principalOf(ctx),
        { status: body.status, reason: body.reason },
      );
      return {
        status: 202,
        body: {
          id: params.deploymentVersionId,
          message: 'Decision recorded',
          records: records.map(toApproval),
        },
      };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/releases/{releaseId}/cancel',
    summary: 'Cancel a release: its active jobs end cancelled',
    tags,
    auth: 'apiKey',
    params: ReleaseParams,
    responses: {
      202: { description: 'The cancelled release', schema: ReleaseSchema },
      409: { description: 'The release already ended' },
    },
    async handle(ctx, { params }) {
      return {
        status: 202,
        body: toRelease(await ctx.state.stores.releases.cancel(params.workspaceId, params.releaseId)),
      };
    },
  }),
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/releases/{releaseId}/redeploy',
    summary: 'Run a release that ran again: a new job once its policies allow (the target must be free)',
    description:
      'The policies still hold, unless the request overrides them with a reason, which is recorded on the release (redeploys).',
    tags,
    auth: 'apiKey',
    params: ReleaseParams,
    body: RedeployBody.optional(),
    responses: {
      202: { description: 'The release, pending its new job', schema: ReleaseSchema },
      409: { description: 'The release is running, or has not run yet' },
    },
    async handle(ctx, { params, body }) {
      return {
        status: 202,
        body: toRelease(
          await ctx.state.stores.releases.redeploy(params.workspaceId, params.releaseId, principalOf(ctx), {
            overrideReason: body?.overridePolicies ? body.reason! : null,
          }),
        ),
      };
    },
  }),
];
