import { PolicyBody, PolicyParams, PolicySchema, toPolicy } from '../schemas/policy';
import { recordRoutes } from './records';

export const policyRoutes = recordRoutes({
  noun: 'policy',
  tag: 'Policies',
  collection: '/workspaces/{workspaceId}/policies',
  idParam: 'policyId',
  params: PolicyParams,
  body: PolicyBody,
  schema: PolicySchema,
  pageName: 'PolicyPage',
  creatable: true,
  duplicate: 'Duplicate name',
  store: (stores) => stores.policies,
  present: async (_, policies) => policies.map(toPolicy),
});
