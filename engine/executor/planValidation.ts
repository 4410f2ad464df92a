import type { EntityManager } from '@mikro-orm/postgresql';
import type { PlanVerdict, RegoEngine } from '../../domain/planValidation';
import type { LoadedRelease } from '../../domain/activityResults';
import type { SecretBox } from '../../db/secrets';
import { planRules } from '../planner/releasePlan';

/** A `planValidationOpa` rule's verdict on one plan of a release. */
export interface PlanVerdictRecord {
  ruleId: string;
  /** `planDigest` of the rule's Rego and the plan it judged. */
  digest: string;
  verdict: PlanVerdict;
}

/** Keeps a release's latest verdicts, one per rule, in place of the ones before. */
export async function recordPlanVerdicts(
  em: EntityManager,
  release: { releaseId: string; workspaceId: string },
  verdicts: readonly PlanVerdictRecord[],
): Promise<void> {
  if (verdicts.length === 0) return;
  await em.execute(
    `INSERT INTO plan_verdict (release_id, rule_id, workspace_id, digest, verdict)
     SELECT ?, v.rule_id, ?, v.digest, v.verdict
       FROM jsonb_to_recordset(?::jsonb) AS v(rule_id uuid, digest text, verdict jsonb)
     ON CONFLICT (release_id, rule_id)
       DO UPDATE SET digest = excluded.digest, verdict = excluded.verdict, evaluated_at = now()`,
    [
      release.releaseId,
      release.workspaceId,
      JSON.stringify(
        verdicts.map((record) => ({
          rule_id: record.ruleId,
          digest: record.digest,
          verdict: record.verdict,
        })),
      ),
    ],
  );
}

/**
 * A stored release's facts with each `planValidationOpa` rule's verdict on its plan, evaluated by
 * the Rego engine (one session of the release's workspace, so one budget for all its rules) and
 * recorded for explanations. Facts without such a rule are returned as they are; an engine that
 * fails gives the rule an error verdict (the gate waits).
 */
export async function withPlanValidation(
  em: EntityManager,
  box: SecretBox,
  rego: RegoEngine,
  loaded: LoadedRelease,
): Promise<LoadedRelease> {
  const { input, rules } = await planRules(em, box, loaded);
  if (rules.length === 0) return loaded;
  const session = rego.session(loaded.workspaceId);
  const verdicts: PlanVerdictRecord[] = [];
  for (const rule of rules) {
    let verdict: PlanVerdict;
    try {
      verdict = { denials: await session.deny(rule.rego, input) };
    } catch (error) {
      verdict = { error: (error as Error).message };
    }
    verdicts.push({ ruleId: rule.id, digest: rule.digest, verdict });
  }
  await recordPlanVerdicts(em, loaded, verdicts);
  const planValidation = Object.fromEntries(verdicts.map((record) => [record.ruleId, record.verdict]));
  return { ...loaded, facts: { ...loaded.facts, planValidation } };
}
