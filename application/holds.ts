import type { EntityManager } from '@mikro-orm/postgresql';
import { actorOf } from '../domain/audit';
import { ConflictError, ValidationError } from '../domain/errors';
import { holdExpiry, MAX_HOLDS_PER_WORKSPACE, type HoldEffect, type HoldSchedule } from '../domain/holds';
import type { Page, PageRequest } from '../domain/pagination';
import type { Principal } from '../domain/principal';
import { loadWorkspaceHolds } from '../engine/eligibility';
import { applyHold, releaseHold } from '../engine/executor';
import { DeploymentVersionSchema, HoldSchema, type Hold } from '../db/entities';
import { newId } from '../db/ids';
import { enqueueOrchestration } from '../db/outbox';
import { findOwned, listPage } from './common';

export interface HoldInput {
  selector: string;
  effect: HoldEffect;
  versionId?: string;
  reason: string;
  expiresAt?: string;
  schedule?: HoldSchedule;
}

export interface HoldFilter {
  effect?: HoldEffect;
  /** Unexpired (true) or expired (false) holds only. */
  active?: boolean;
}

/**
 * Holds (domain/holds.ts): written with who asked and applied in the same transaction (queued jobs
 * held back, covered releases woken, a pin's targets moved); one that changes by itself gets a
 * workflow that keeps its clock. Deleted, everything it held looks again.
 */
export class HoldStore {
  constructor(private readonly em: EntityManager) {}

  create(workspaceId: string, principal: Principal, input: HoldInput): Promise<Hold> {
    return this.em.transactional(async (em) => {
      assertShape(input);
      const unexpired = await em.count(HoldSchema, {
        workspaceId,
        $or: [{ expiresAt: null }, { expiresAt: { $gt: new Date() } }],
      });
      if (unexpired >= MAX_HOLDS_PER_WORKSPACE)
        throw new ConflictError(
          `The workspace has ${unexpired} holds, the most it may have; delete one first`,
          'too_many_holds',
        );
      if (input.versionId) {
        const version = await findOwned(
          em,
          DeploymentVersionSchema,
          workspaceId,
          input.versionId,
          'deployment version',
        );
        if (version.status !== 'ready')
          throw new ValidationError(
            `Version ${version.tag} is ${version.status}: only a ready version can be pinned`,
            [{ path: 'body.versionId', message: `the version is ${version.status}` }],
          );
      }
      const now = new Date();
      const actor = actorOf(principal);
      const hold = em.create(HoldSchema, {
        id: newId(),
        workspaceId,
        selector: input.selector,
        effect: input.effect,
        versionId: input.versionId ?? null,
        reason: input.reason,
        expiresAt: holdExpiry(input.expiresAt, now),
        schedule: input.schedule ?? null,
        createdById: actor.id,
        createdByName: actor.name,
        createdAt: now,
      });
      await em.flush();
      const { nextChangeAt } = await applyHold(em, workspaceId, hold.id);
      if (nextChangeAt)
        await enqueueOrchestration(em, { kind: 'hold.watch', workspaceId, holdId: hold.id, nextChangeAt });
      return hold;
    });
  }

  list(workspaceId: string, filter: HoldFilter, page: PageRequest): Promise<Page<Hold>> {
    const now = new Date();
    return listPage(
      this.em,
      HoldSchema,
      {
        workspaceId,
        ...(filter.effect ? { effect: filter.effect } : {}),
        ...(filter.active === undefined
          ? {}
          : filter.active
            ? { $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] }
            : { expiresAt: { $lte: now } }),
      },
      page,
      'desc',
    );
  }

  get(workspaceId: string, holdId: string): Promise<Hold> {
    return findOwned(this.em, HoldSchema, workspaceId, holdId, 'hold');
  }

  delete(workspaceId: string, holdId: string): Promise<Hold> {
    return this.em.transactional(async (em) => {
      const hold = await findOwned(em, HoldSchema, workspaceId, holdId, 'hold');
      const [stored] = await loadWorkspaceHolds(em, [workspaceId], [holdId]);
      em.remove(hold);
      await em.flush();
      await releaseHold(em, stored!);
      if (hold.schedule || hold.expiresAt) await enqueueOrchestration(em, { kind: 'hold.end', holdId });
      return hold;
    });
  }
}

/** A pin names its version and a block none; only a block has a schedule (a freeze). */
function assertShape(input: HoldInput): void {
  const problem =
    input.effect === 'pin' && !input.versionId
      ? { path: 'body.versionId', message: 'a pin names the version its targets stay on' }
      : input.effect === 'block' && input.versionId
        ? { path: 'body.versionId', message: 'only a pin names a version' }
        : input.effect === 'pin' && input.schedule
          ? { path: 'body.schedule', message: 'only a block hold has a schedule (a freeze)' }
          : null;
  if (problem) throw new ValidationError(`Invalid hold: ${problem.message}`, [problem]);
}
