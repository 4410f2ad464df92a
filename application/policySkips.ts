import type { EntityManager } from '@mikro-orm/postgresql';
import { actorOf } from '../domain/audit';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors';
import { distinctApproverRefusal } from '../domain/versionAuthors';
import { versionAuthorRole } from '../engine/eligibility';
import { refuseVersionAuthor, SYSTEM_ORIGIN, type AuditOrigin } from '../db/audit';
import type { Page, PageRequest } from '../domain/pagination';
import type { PolicyRule } from '../domain/policies';
import {
  MAX_ACTIVE_SKIPS_PER_WORKSPACE,
  SKIPPABLE_RULE_KINDS,
  skipExpiry,
  type SkipLifetimes,
} from '../domain/policySkips';
import type { Principal } from '../domain/principal';
import { ruleKind } from '../domain/ruleKinds';
import {
  DeploymentVersionSchema,
  EnvironmentSchema,
  HoldSchema,
  PolicySkipSchema,
  ResourceSchema,
  type PolicySkip,
} from '../db/entities';
import { newId } from '../db/ids';
import { wakeReleases } from '../db/releaseWake';
import { findOwned, listPage } from './common';
import { applyHold } from '../engine/executor';

export interface PolicySkipInput {
  ruleId: string;
  versionId: string;
  environmentId?: string;
  resourceId?: string;
  reason: string;
  expiresAt?: string;
}

export interface PolicySkipFilter {
  versionId?: string;
  ruleId?: string;
  /** Unexpired (true) or expired (false) skips only. */
  active?: boolean;
}

/**
 * Policy skips (domain/policySkips.ts): written with who asked, and the releases they may let go
 * woken at once; deleted, the same releases look again and wait where the rule still holds them.
 */
export class PolicySkipStore {
  constructor(
    private readonly em: EntityManager,
    private readonly lifetimes: SkipLifetimes,
    /** Who the request acts as: a refused skip is recorded as theirs. */
    private readonly origin: AuditOrigin = SYSTEM_ORIGIN,
  ) {}

  create(workspaceId: string, principal: Principal, input: PolicySkipInput): Promise<PolicySkip> {
    return this.em.transactional(async (em) => {
      await findOwned(em, DeploymentVersionSchema, workspaceId, input.versionId, 'deployment version');
      if (input.environmentId)
        await findOwned(em, EnvironmentSchema, workspaceId, input.environmentId, 'environment');
      if (input.resourceId) await findOwned(em, ResourceSchema, workspaceId, input.resourceId, 'resource');
      const active = await em.count(PolicySkipSchema, { workspaceId, expiresAt: { $gt: new Date() } });
      if (active >= MAX_ACTIVE_SKIPS_PER_WORKSPACE) {
        throw new ConflictError(
          `The workspace has ${active} unexpired policy skips, the most it may have; delete one first`,
          'too_many_skips',
        );
      }
      const { skipsHold, rule } = await assertSkippableRule(em, workspaceId, input.ruleId);
      const now = new Date();
      const actor = actorOf(principal);
      if (rule?.spec.anyApproval?.requireDistinctApprover) {
        const { role, tag } = await versionAuthorRole(em, input.versionId, actor.id);
        if (role) {
          await refuseVersionAuthor(
            em,
            this.origin,
            distinctApproverRefusal(role, tag, 'skip its approval rule', rule.policyName),
            {
              workspaceId,
              action: 'policy_skip.refused',
              record: { type: 'version', id: input.versionId },
              details: { ruleId: input.ruleId },
            },
          );
        }
      }
      const skip = em.create(PolicySkipSchema, {
        id: newId(),
        workspaceId,
        ruleId: input.ruleId,
        versionId: input.versionId,
        environmentId: input.environmentId ?? null,
        resourceId: input.resourceId ?? null,
        reason: input.reason,
        expiresAt: skipExpiry(input.expiresAt, now, this.lifetimes),
        createdById: actor.id,
        createdByName: actor.name,
        createdAt: now,
      });
      await em.flush();
      await wakeScope(em, skip);
      if (skipsHold) await applyHold(em, workspaceId, skip.ruleId);
      return skip;
    });
  }

  list(workspaceId: string, filter: PolicySkipFilter, page: PageRequest): Promise<Page<PolicySkip>> {
    const now = new Date();
    return listPage(
      this.em,
      PolicySkipSchema,
      {
        workspaceId,
        ...(filter.versionId ? { versionId: filter.versionId } : {}),
        ...(filter.ruleId ? { ruleId: filter.ruleId } : {}),
        ...(filter.active === undefined ? {} : { expiresAt: filter.active ? { $gt: now } : { $lte: now } }),
      },
      page,
      'desc',
    );
  }

  get(workspaceId: string, skipId: string): Promise<PolicySkip> {
    return findOwned(this.em, PolicySkipSchema, workspaceId, skipId, 'policy skip');
  }

  delete(workspaceId: string, skipId: string): Promise<PolicySkip> {
    return this.em.transactional(async (em) => {
      const skip = await findOwned(em, PolicySkipSchema, workspaceId, skipId, 'policy skip');
      em.remove(skip);
      await em.flush();
      await wakeScope(em, skip);
      // A break-glass ended: the hold keeps this version's queued jobs back again.
      await applyHold(em, workspaceId, skip.ruleId);
      return skip;
    });
  }
}

/**
 * The rule is one of the workspace's policies' gate rules (400 for another kind), with its policy's
 * name, or one of its holds (a break-glass); 404 otherwise.
 */
async function assertSkippableRule(
  em: EntityManager,
  workspaceId: string,
  ruleId: string,
): Promise<{ skipsHold: boolean; rule?: { spec: PolicyRule; policyName: string } }> {
  const [policy] = await em.execute<{ name: string; rules: PolicyRule[] }[]>(
    `SELECT name, rules FROM policy WHERE workspace_id = ? AND rules @> jsonb_build_array(jsonb_build_object('id', ?::text))`,
    [workspaceId, ruleId],
  );
  const rule = policy?.rules.find((candidate) => candidate.id === ruleId);
  if (!rule) {
    if (await em.findOne(HoldSchema, { id: ruleId, workspaceId })) return { skipsHold: true };
    throw new NotFoundError('policy rule or hold', ruleId);
  }
  const kind = ruleKind(rule);
  if (!SKIPPABLE_RULE_KINDS.includes(kind)) {
    throw new ValidationError(`A ${kind} rule is not a gate: nothing waits at it to be skipped`, [
      { path: 'body.ruleId', message: `a ${kind} rule; skippable: ${SKIPPABLE_RULE_KINDS.join(', ')}` },
    ]);
  }
  return { skipsHold: false, rule: { spec: rule, policyName: policy!.name } };
}

/** The version's pending releases on the skip's scope look again. */
async function wakeScope(em: EntityManager, skip: PolicySkip): Promise<void> {
  const pending = await em.execute<{ id: string }[]>(
    `SELECT id FROM release
      WHERE version_id = ? AND phase = 'pending'
        AND (?::uuid IS NULL OR environment_id = ?::uuid) AND (?::uuid IS NULL OR resource_id = ?::uuid)`,
    [skip.versionId, skip.environmentId, skip.environmentId, skip.resourceId, skip.resourceId],
  );
  await wakeReleases(
    em,
    pending.map((row) => row.id),
  );
}
