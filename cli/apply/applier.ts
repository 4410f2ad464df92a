import { randomUUID } from 'node:crypto';
import { changedFields, mergedBody, sameValue, type CompareOptions } from './compare';
import {
  DOCUMENT_TYPES,
  DocumentError,
  where,
  type Desired,
  type DesiredVariable,
  type Source,
} from './documents';
import type { WorkspaceApi } from './workspaceApi';

/**
 * Makes a workspace hold what the documents describe, through the public API. A record is found by
 * its natural key (agent, environment and policy by name, system and deployment by slug, resource
 * by identifier, version by deployment and tag); only the fields a document gives are compared and
 * written, and nothing the documents do not mention is deleted. New records are created with PUT
 * on a fresh id, so every write is one idempotent request and a rerun after a failure converges.
 */

export type Action = 'create' | 'update' | 'unchanged';

export interface Change {
  source: Source;
  label: string;
  action: Action;
  /** The fields that differ (for an update). */
  fields: string[];
}

export interface ApplyOptions extends CompareOptions {
  dryRun: boolean;
  /** Called as each record is done, for progress output. */
  onChange?: (change: Change) => void;
}

/** The documents were refused before anything was written. */
export class ApplyRefused extends Error {
  constructor(readonly errors: DocumentError[]) {
    super(errors.map((error) => error.message).join('\n'));
  }
}

/** The API refused a write part-way; what was applied before it stays, and a rerun resumes. */
export class ApplyStopped extends Error {
  constructor(
    readonly document: Desired,
    reason: Error,
    readonly applied: Change[],
  ) {
    super(`${where(document.source, document.label)}: ${reason.message}`);
  }
}

interface RemoteRecord {
  id: string;
  [field: string]: unknown;
}

interface Linked extends RemoteRecord {
  systemIds: string[];
}

interface RemoteVariable {
  variable: RemoteRecord & { key: string };
  values: (RemoteRecord & { referenceValue?: unknown })[];
}

/** The fields each record's PUT body takes. */
const BODY_KEYS = {
  JobAgent: ['name', 'type', 'config', 'metadata'],
  System: ['name', 'slug', 'description', 'metadata'],
  Environment: ['name', 'description', 'resourceSelector', 'metadata'],
  Deployment: ['name', 'slug', 'description', 'resourceSelector', 'jobAgents', 'metadata'],
  Policy: ['name', 'description', 'selector', 'priority', 'enabled', 'metadata', 'rules'],
  Variable: ['key', 'description', 'defaultValue', 'sensitive'],
} as const;

const VERSION_FIELDS = ['name', 'status', 'config', 'jobAgentConfig', 'metadata'] as const;

export async function applyDocuments(
  documents: Desired[],
  api: WorkspaceApi,
  options: ApplyOptions,
): Promise<Change[]> {
  const [agents, systems, environments, deployments, policies] = await Promise.all([
    api.list<RemoteRecord>('/job-agents'),
    api.list<RemoteRecord>('/systems'),
    api.list<Linked>('/environments'),
    api.list<Linked>('/deployments'),
    api.list<RemoteRecord>('/policies'),
  ]);
  const applier = new Applier(api, options, { agents, systems, environments, deployments, policies });
  const refused = applier.checkReferences(documents);
  if (refused.length > 0) throw new ApplyRefused(refused);
  const ordered = [...documents].sort(
    (a, b) => DOCUMENT_TYPES.indexOf(a.type) - DOCUMENT_TYPES.indexOf(b.type),
  );
  const changes: Change[] = [];
  for (const document of ordered) {
    let done: Change[];
    try {
      done = await applier.apply(document);
    } catch (error) {
      throw new ApplyStopped(document, error as Error, changes);
    }
    for (const change of done) {
      changes.push(change);
      options.onChange?.(change);
    }
  }
  return changes;
}

interface RemoteState {
  agents: RemoteRecord[];
  systems: RemoteRecord[];
  environments: Linked[];
  deployments: Linked[];
  policies: RemoteRecord[];
}

class Applier {
  /** System name or slug → id; deployment slug → id; filled as records are found or created. */
  private readonly systemIds = new Map<string, string>();
  private readonly deploymentIds = new Map<string, string>();

  constructor(
    private readonly api: WorkspaceApi,
    private readonly options: ApplyOptions,
    private readonly remote: RemoteState,
  ) {
    for (const system of remote.systems) {
      this.systemIds.set(system.slug as string, system.id);
      this.systemIds.set(system.name as string, system.id);
    }
    for (const deployment of remote.deployments)
      this.deploymentIds.set(deployment.slug as string, deployment.id);
  }

  /** Names that point at nothing, found before any write so a bad file changes nothing. */
  checkReferences(documents: Desired[]): DocumentError[] {
    const inFile = (type: Desired['type']) => documents.filter((document) => document.type === type);
    const systems = new Set([
      ...this.systemIds.keys(),
      ...inFile('System').flatMap((document) => [document.key, (document.body as { name: string }).name]),
    ]);
    const agents = new Set([
      ...this.remote.agents.flatMap((agent) => [agent.id, agent.name as string]),
      ...inFile('JobAgent').map((document) => document.key),
    ]);
    const deployments = new Set([...this.deploymentIds.keys(), ...inFile('Deployment').map((d) => d.key)]);
    const errors: DocumentError[] = [];
    for (const document of documents) {
      const problems: string[] = [];
      if (document.type === 'Environment' || document.type === 'Deployment') {
        for (const system of document.systems ?? [])
          if (!systems.has(system))
            problems.push(`system "${system}" is neither in the files nor in the workspace`);
      }
      if (document.type === 'Deployment') {
        document.body.jobAgents.forEach((entry, index) => {
          if (!agents.has(entry.ref))
            problems.push(
              `jobAgents.${index}.ref: no job agent "${entry.ref}" in the files or the workspace`,
            );
        });
      }
      if (document.type === 'DeploymentVersion' && !deployments.has(document.deployment))
        problems.push(`deployment "${document.deployment}" is neither in the files nor in the workspace`);
      if (problems.length > 0) errors.push(new DocumentError(document.source, document.label, problems));
    }
    return errors;
  }

  apply(document: Desired): Promise<Change[]> {
    switch (document.type) {
      case 'JobAgent':
        return this.one(
          document,
          '/job-agents',
          this.byField(this.remote.agents, 'name', document.key),
          BODY_KEYS.JobAgent,
        );
      case 'System':
        return this.system(document);
      case 'Environment':
        return this.linked(
          document,
          '/environments',
          'environments',
          this.byField(this.remote.environments, 'name', document.key),
          BODY_KEYS.Environment,
        );
      case 'Deployment':
        return this.deployment(document);
      case 'Resource':
        return this.resource(document);
      case 'Policy':
        return this.policy(document);
      case 'DeploymentVersion':
        return this.version(document);
    }
  }

  private byField<T extends RemoteRecord>(records: T[], field: string, value: string): T | undefined {
    return records.find((record) => record[field] === value);
  }

  private change(document: Desired, action: Action, fields: string[] = [], label = document.label): Change {
    return { source: document.source, label, action, fields };
  }

  /**
   * Creates the record (PUT on a new id) or replaces it with its current fields overlaid by the
   * document's, when any given field differs. In a dry run the id of a record to be created is a
   * placeholder that only later lookups in the same run see.
   */
  private async upsert(
    collection: string,
    current: RemoteRecord | undefined,
    keys: readonly string[],
    desired: Record<string, unknown>,
  ): Promise<{ id: string; action: Action; fields: string[] }> {
    if (!current) {
      const id = this.options.dryRun ? `(new ${randomUUID()})` : randomUUID();
      if (!this.options.dryRun) await this.api.put(`${collection}/${id}`, mergedBody(keys, {}, desired));
      return { id, action: 'create', fields: [] };
    }
    const fields = changedFields(pick(desired, keys), current, this.options);
    if (fields.length > 0 && !this.options.dryRun)
      await this.api.put(`${collection}/${current.id}`, mergedBody(keys, current, desired));
    return { id: current.id, action: fields.length > 0 ? 'update' : 'unchanged', fields };
  }

  private isPlanned(id: string): boolean {
    return id.startsWith('(new ');
  }

  private async one(
    document: Desired,
    collection: string,
    current: RemoteRecord | undefined,
    keys: readonly string[],
  ): Promise<Change[]> {
    const result = await this.upsert(collection, current, keys, document.body as Record<string, unknown>);
    return [this.change(document, result.action, result.fields)];
  }

  private async system(document: Extract<Desired, { type: 'System' }>): Promise<Change[]> {
    const current = this.byField(this.remote.systems, 'slug', document.key);
    const result = await this.upsert('/systems', current, BODY_KEYS.System, document.body);
    this.systemIds.set(document.key, result.id);
    this.systemIds.set(document.body.name, result.id);
    return [this.change(document, result.action, result.fields)];
  }

  /** An environment or deployment and its system links (exactly the listed systems, when listed). */
  private async linked(
    document: Extract<Desired, { type: 'Environment' | 'Deployment' }>,
    collection: string,
    linkKind: 'environments' | 'deployments',
    current: Linked | undefined,
    keys: readonly string[],
  ): Promise<Change[]> {
    const result = await this.upsert(collection, current, keys, document.body);
    const fields = [...result.fields];
    if (document.systems) {
      const wanted = new Set(document.systems.map((system) => this.systemIds.get(system)!));
      const had = new Set(current?.systemIds ?? []);
      const link = [...wanted].filter((id) => !had.has(id));
      const unlink = [...had].filter((id) => !wanted.has(id));
      if (link.length + unlink.length > 0) fields.push('systems');
      if (!this.options.dryRun) {
        for (const system of link) await this.api.put(`/systems/${system}/${linkKind}/${result.id}`, {});
        for (const system of unlink) await this.api.delete(`/systems/${system}/${linkKind}/${result.id}`);
      }
    }
    const action = result.action === 'create' ? 'create' : fields.length > 0 ? 'update' : 'unchanged';
    if (document.type === 'Deployment') this.deploymentIds.set(document.key, result.id);
    const changes = [this.change(document, action, fields)];
    if (document.type === 'Deployment' && document.variables) {
      changes.push(...(await this.variables(document, result.id, document.variables)));
    }
    return changes;
  }

  private deployment(document: Extract<Desired, { type: 'Deployment' }>): Promise<Change[]> {
    const current = this.byField(this.remote.deployments, 'slug', document.key);
    return this.linked(document, '/deployments', 'deployments', current, BODY_KEYS.Deployment);
  }

  /**
   * A deployment's listed variables, each with exactly the listed values. A value has no natural
   * key, so values are matched by content: equal ones stay, the rest are added or removed.
   */
  private async variables(
    document: Extract<Desired, { type: 'Deployment' }>,
    deploymentId: string,
    variables: DesiredVariable[],
  ): Promise<Change[]> {
    const existing = this.isPlanned(deploymentId)
      ? []
      : await this.api.list<RemoteVariable>(`/deployments/${deploymentId}/variables`);
    const changes: Change[] = [];
    for (const { body, values } of variables) {
      const label = `Variable "${document.key}.${body.key}"`;
      const current = existing.find((entry) => entry.variable.key === body.key);
      const collection = `/deployments/${deploymentId}/variables`;
      const result = await this.upsert(collection, current?.variable, BODY_KEYS.Variable, body);
      const stale = [...(current?.values ?? [])];
      const missing = values.filter((value) => {
        const match = stale.findIndex((candidate) => this.sameVariableValue(value, candidate));
        if (match === -1) return true;
        stale.splice(match, 1);
        return false;
      });
      if (!this.options.dryRun) {
        for (const value of missing)
          await this.api.put(`${collection}/${result.id}/values/${randomUUID()}`, valueBody(value));
        for (const value of stale) await this.api.delete(`${collection}/${result.id}/values/${value.id}`);
      }
      const fields = missing.length + stale.length > 0 ? [...result.fields, 'values'] : result.fields;
      const action = result.action === 'create' ? 'create' : fields.length > 0 ? 'update' : 'unchanged';
      changes.push(this.change(document, action, fields, label));
    }
    return changes;
  }

  private sameVariableValue(
    desired: DesiredVariable['values'][number],
    current: RemoteVariable['values'][number],
  ) {
    const wanted = {
      priority: desired.priority,
      resourceSelector: desired.resourceSelector,
      sensitive: desired.sensitive ?? false,
      value: 'value' in desired ? desired.value : undefined,
      reference: 'reference' in desired ? desired.reference : undefined,
    };
    const stored = {
      priority: current.priority,
      resourceSelector: current.resourceSelector,
      sensitive: current.sensitive,
      value: current.value,
      reference: current.referenceValue,
    };
    return sameValue(wanted, stored, this.options);
  }

  /** Resources are upserted by identifier; a deleted one that the file lists comes back. */
  private async resource(document: Extract<Desired, { type: 'Resource' }>): Promise<Change[]> {
    const path = `/resources/identifier/${encodeURIComponent(document.identifier)}`;
    const current = await this.api.find<RemoteRecord>(path);
    const { variables, ...fields } = document.body;
    const compared = {
      ...fields,
      variables: variables && Object.fromEntries(variables.map((variable) => [variable.key, variable.value])),
    };
    const changed = current ? changedFields(compared, current, this.options) : [];
    if (current?.deletedAt) changed.push('deletedAt');
    const action: Action = !current ? 'create' : changed.length > 0 ? 'update' : 'unchanged';
    if (action !== 'unchanged' && !this.options.dryRun) await this.api.put(path, document.body);
    return [this.change(document, action, changed)];
  }

  /**
   * Rules read back with what the file does not give (their `id`, `policyId` and `createdAt`, which the API
   * keeps itself); they are compared, and sent back, without them.
   */
  private async policy(document: Extract<Desired, { type: 'Policy' }>): Promise<Change[]> {
    const current = this.byField(this.remote.policies, 'name', document.key);
    const comparable = current && {
      ...current,
      rules: (current.rules as Record<string, unknown>[]).map(
        ({ id: _id, policyId: _policyId, createdAt: _createdAt, ...rule }) => rule,
      ),
    };
    const result = await this.upsert('/policies', comparable, BODY_KEYS.Policy, document.body);
    return [this.change(document, result.action, result.fields)];
  }

  /** Versions are created once; later applies change only what PATCH allows (status moves, fields). */
  private async version(document: Extract<Desired, { type: 'DeploymentVersion' }>): Promise<Change[]> {
    const deploymentId = this.deploymentIds.get(document.deployment)!;
    const filter = encodeURIComponent(`version.tag == ${JSON.stringify(document.body.tag)}`);
    const [current] = this.isPlanned(deploymentId)
      ? []
      : await this.api.list<RemoteRecord>(`/deployments/${deploymentId}/versions?cel=${filter}`);
    if (!current) {
      if (!this.options.dryRun) await this.api.post(`/deployments/${deploymentId}/versions`, document.body);
      return [this.change(document, 'create')];
    }
    const fields = changedFields(pick(document.body, VERSION_FIELDS), current, this.options);
    if (fields.length > 0 && !this.options.dryRun) {
      await this.api.patch(`/deployment-versions/${current.id}`, pick(document.body, fields));
    }
    return [this.change(document, fields.length > 0 ? 'update' : 'unchanged', fields)];
  }
}

/** A parsed value back in the API's spelling (parsing renamed `referenceValue` to `reference`). */
function valueBody(value: DesiredVariable['values'][number]): Record<string, unknown> {
  if (!('reference' in value)) return value;
  const { reference, ...rest } = value;
  return { ...rest, referenceValue: reference };
}

function pick(source: object, keys: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const key of keys) picked[key] = (source as Record<string, unknown>)[key];
  return picked;
}
