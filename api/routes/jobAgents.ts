import { JobAgentBody, JobAgentParams, JobAgentSchema, toJobAgent } from '../schemas/jobAgent';
import { recordRoutes } from './records';

/**
 * Job agents are created by PUT with a client-chosen id. The configuration is checked for the
 * agent type; secrets are stored encrypted and never returned, and writing back {"sensitive": true}
 * keeps the stored secret while the agent's type and endpoint stay (docs/security.md "Credential binding").
 */
export const jobAgentRoutes = recordRoutes({
  noun: 'job agent',
  tag: 'Job agents',
  collection: '/workspaces/{workspaceId}/job-agents',
  idParam: 'jobAgentId',
  params: JobAgentParams,
  body: JobAgentBody,
  schema: JobAgentSchema,
  pageName: 'JobAgentPage',
  acceptedName: 'JobAgentAccepted',
  creatable: false,
  duplicate:
    'Duplicate name; or a kept credential whose type or endpoint changed (credential_destination_changed)',
  store: (stores) => stores.jobAgents,
  present: async (_, agents) => agents.map(toJobAgent),
});
