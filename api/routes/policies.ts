import { policySelectors } from '../../domain/policies';
import { route } from '../route';
import { WorkspaceParams } from '../schemas/common';
import { PolicyBody, PolicyDryRunSchema, PolicyParams, PolicySchema, toPolicy } from '../schemas/policy';
import { recordRoutes } from './records';

export const policyRoutes = [
  route({
    method: 'post',
    path: '/workspaces/{workspaceId}/policies/dry-run',
    audit: false,
    summary: 'Try a policy without saving it',
    description:
      'The release targets the policy would hold now (waiting or blocked) and why, grouped by rule: each rule evaluated by the gates’ own code on a would-be release of each matching target’s newest ready version (at most 5,000 targets). Nothing is written.',
    tags: ['Policies'],
    auth: 'apiKey',
    params: WorkspaceParams,
    body: PolicyBody,
    responses: { 200: { description: 'What the policy would hold', schema: PolicyDryRunSchema } },
    async handle(ctx, { params, body }) {
      return { status: 200, body: await ctx.state.stores.policies.dryRun(params.workspaceId, body) };
    },
  }),
  ...recordRoutes({
    noun: 'policy',
    tag: 'Policies',
    collection: '/workspaces/{workspaceId}/policies',
    idParam: 'policyId',
    params: PolicyParams,
    body: PolicyBody,
    schema: PolicySchema,
    pageName: 'PolicyPage',
    creatable: true,
    deleteAnswersRecord: true,
    duplicate:
      'Duplicate name; or a kept metric provider credential whose type or address changed (credential_destination_changed)',
    store: (stores) => stores.policies,
    present: async (_, policies) => policies.map(toPolicy),
    selectors: policySelectors,
  }),
];
