import type { EntityManager } from '@mikro-orm/postgresql';
import { NotFoundError, ValidationError, type FieldIssue } from '../domain/errors';
import type { Page, PageRequest } from '../domain/pagination';
import type { RegoEngine } from '../domain/planValidation';
import { dryRunPolicy, type DryRunRule } from '../domain/policyDryRun';
import { releaseTargetKey } from '../domain/releaseTargets';
import { loadDryRunFacts } from '../engine/eligibility';
import type { PolicyRule, PolicyRuleInput } from '../domain/policies';
import { PolicySchema, type Policy } from '../db/entities';
import { conflictOnDuplicate } from '../db/errors';
import { newId } from '../db/ids';
import type { SecretBox } from '../db/secrets';
import { bindSecretReferences } from '../db/secretReferences';
import { probeSecretReferences, sealProbeHeaders } from '../db/sensitiveValues';
import { wakeReleases } from '../db/releaseWake';
import { findOwned, listPage, type Upserted } from './common';

/** Targets a dry run evaluates, at most: it runs within its request. */
export const MAX_DRY_RUN_TARGETS = 5000;

export interface PolicyDryRun {
  /** Release targets with a ready version that the policy's selector matches. */
  matchedTargets: number;
  /** Of those, the ones evaluated (at most MAX_DRY_RUN_TARGETS). */
  evaluatedTargets: number;
  rules: DryRunRule[];
}

export interface PolicyInput {
  name: string;
  description?: string | null;
  selector?: string;
  priority?: number;
  enabled?: boolean;
  metadata?: Record<string, string>;
  rules?: PolicyRuleInput[];
}

/** Releases waiting at gates evaluate again after any policy change: a rule may have gone, or come. */
async function wakePendingReleases(em: EntityManager, workspaceId: string): Promise<void> {
  const pending = await em.execute<{ id: string }[]>(
    `SELECT id FROM release WHERE workspace_id = ? AND phase = 'pending'`,
    [workspaceId],
  );
  await wakeReleases(
    em,
    pending.map((row) => row.id),
  );
}

/**
 * Each `planValidationOpa` rule's Rego compiled by the engine, in one session of the workspace (one
 * budget for the request): a policy that does not compile is refused (400).
 */
async function checkRegoRules(
  rego: RegoEngine,
  workspaceId: string,
  rules: readonly PolicyRuleInput[],
): Promise<void> {
  const issues: FieldIssue[] = [];
  const session = rego.session(workspaceId);
  for (const [index, rule] of rules.entries()) {
    if (!rule.planValidationOpa) continue;
    const problem = await session.check(rule.planValidationOpa.rego);
    if (problem) issues.push({ path: `body.rules[${index}].planValidationOpa.rego`, message: problem });
  }
  if (issues.length > 0) throw new ValidationError('A plan validation policy is refused', issues);
}

/**
 * Rules as stored. Every rule keeps a stable id, so approvals and evaluations can refer to it, and the time it was
 * first written under that id; the `policyId` and `createdAt` a rule read back shows are not taken from the input.
 */
function storedRules(
  rules: readonly PolicyRuleInput[],
  existing: Pick<Policy, 'rules' | 'createdAt'> | null,
  now: Date,
): PolicyRule[] {
  // A rule stored before rules kept their time shows its policy's (api/schemas/policy.ts), and keeps it.
  const firstWritten = new Map(
    (existing?.rules ?? []).map((rule) => [rule.id, rule.createdAt ?? existing!.createdAt.toISOString()]),
  );
  return rules.map(({ policyId: _policyId, createdAt: _createdAt, ...rule }) => {
    const id = rule.id ?? newId();
    return { ...rule, id, createdAt: firstWritten.get(id) ?? now.toISOString() };
  });
}

export class PolicyStore {
  constructor(
    private readonly em: EntityManager,
    private readonly secrets: SecretBox,
    private readonly rego: RegoEngine,
  ) {}

  async create(workspaceId: string, input: PolicyInput): Promise<Policy> {
    return (await this.upsert(workspaceId, newId(), input)).record;
  }

  async upsert(workspaceId: string, id: string, input: PolicyInput): Promise<Upserted<Policy>> {
    await checkRegoRules(this.rego, workspaceId, input.rules ?? []);
    return conflictOnDuplicate(
      () =>
        this.em.transactional(async (em) => {
          const existing = await em.findOne(PolicySchema, { id });
          if (existing && existing.workspaceId !== workspaceId) throw new NotFoundError('policy', id);
          const fields = {
            name: input.name,
            description: input.description ?? null,
            selector: input.selector ?? 'true',
            priority: input.priority ?? 0,
            enabled: input.enabled ?? true,
            metadata: input.metadata ?? {},
            rules: sealProbeHeaders(
              this.secrets.forRecord(workspaceId, 'policy', id),
              storedRules(input.rules ?? [], existing, new Date()),
              existing?.rules ?? [],
            ),
          };
          for (const { destination, references } of probeSecretReferences(fields.rules))
            await bindSecretReferences(em, workspaceId, references, destination);
          const record = existing
            ? em.assign(existing, fields)
            : em.create(PolicySchema, { id, workspaceId, ...fields });
          await em.flush();
          await wakePendingReleases(em, workspaceId);
          return { record, created: !existing };
        }),
      `A policy named "${input.name}" already exists in this workspace`,
    );
  }

  /**
   * A policy tried without saving it: its rules on a would-be release of each matching target's
   * newest ready version, at most MAX_DRY_RUN_TARGETS targets (domain/policyDryRun.ts).
   */
  async dryRun(workspaceId: string, input: PolicyInput): Promise<PolicyDryRun> {
    await checkRegoRules(this.rego, workspaceId, input.rules ?? []);
    const id = newId();
    const rules = storedRules(
      (input.rules ?? []).map(({ id: _id, ...rule }) => rule),
      null,
      new Date(),
    );
    const policy = {
      id,
      name: input.name,
      priority: input.priority ?? 0,
      rules,
      selector: input.selector ?? 'true',
    };
    const { facts, targets, matched } = await loadDryRunFacts(
      this.em,
      workspaceId,
      policy,
      MAX_DRY_RUN_TARGETS,
    );
    const evaluated = [...facts.entries()].map(([releaseId, loaded]) => {
      const { resource, environment, deployment, version } = loaded.facts;
      return {
        target: {
          releaseTargetKey: releaseTargetKey(targets.get(releaseId)!),
          resource: { name: resource.name ?? '', identifier: resource.identifier },
          environment: { id: environment.id, name: environment.name },
          deployment: { id: deployment.id, slug: deployment.slug },
          version: { id: version.id, tag: version.tag },
        },
        facts: loaded.facts,
      };
    });
    return {
      matchedTargets: matched,
      evaluatedTargets: evaluated.length,
      rules: dryRunPolicy(id, rules, evaluated, new Date()),
    };
  }

  get(workspaceId: string, id: string): Promise<Policy> {
    return findOwned(this.em, PolicySchema, workspaceId, id, 'policy');
  }

  list(workspaceId: string, page: PageRequest): Promise<Page<Policy>> {
    return listPage(this.em, PolicySchema, { workspaceId }, page);
  }

  /** Removes the policy; answers it as it was. */
  delete(workspaceId: string, id: string): Promise<Policy> {
    return this.em.transactional(async (em) => {
      const policy = await findOwned(em, PolicySchema, workspaceId, id, 'policy');
      em.remove(policy);
      await em.flush();
      await wakePendingReleases(em, workspaceId);
      return policy;
    });
  }
}
