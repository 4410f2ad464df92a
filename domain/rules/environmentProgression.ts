import { RULE_DEFAULTS } from '../ruleDefaults';
import { eachRuleOf, instantIso, type TargetFacts, type RuleEvaluation } from './evaluator';

export interface ProgressionFact {
  ruleId: string;
  environments: {
    id: string;
    name: string;
    /** Release targets of the deployment in that environment. */
    targets: number;
    /** Completion times (ascending) of this version's jobs there that ended in a success status. */
    successes: string[];
  }[];
}

/** What a progression rule reads: for each of its rules, the environments it depends on. */
export interface ProgressionFacts {
  progression: ProgressionFact[];
}

/**
 * Ctrlplane's `environmentProgression`: the version succeeded on enough targets of every
 * environment the rule depends on, recently enough, and has soaked there since.
 */

export const kind = 'environmentProgression';

export function evaluate(facts: TargetFacts & ProgressionFacts, nowDate: Date): RuleEvaluation[] {
  return eachRuleOf(facts, kind, ({ id, spec }) => {
    const now = nowDate.getTime();
    const environments = facts.progression.find((p) => p.ruleId === id)?.environments ?? [];
    if (environments.length === 0)
      return { state: 'passed', reason: 'no environment matches the dependency' };
    let readyAt = 0;
    for (const env of environments) {
      const needed = Math.max(1, Math.ceil(((spec.minimumSuccessPercentage ?? 100) / 100) * env.targets));
      if (env.successes.length < needed) {
        return {
          state: 'waiting',
          reason: `${env.name}: ${env.successes.length} of ${env.targets} targets succeeded, ${needed} needed`,
          waitingOn: { environmentId: env.id, successes: needed },
        };
      }
      const reached = Date.parse(env.successes[needed - 1]!);
      if (spec.maximumAgeHours !== undefined && now - reached > spec.maximumAgeHours * 3_600_000) {
        return {
          state: 'blocked',
          reason: `${env.name}: its success is older than ${spec.maximumAgeHours} h`,
        };
      }
      const soakMinutes = spec.minimumSoakTimeMinutes ?? RULE_DEFAULTS.minimumSoakTimeMinutes;
      readyAt = Math.max(readyAt, reached + soakMinutes * 60_000);
    }
    return readyAt > now
      ? {
          state: 'waiting',
          reason: `soaking until ${instantIso(readyAt)}`,
          nextEvaluationAt: instantIso(readyAt),
        }
      : { state: 'passed', reason: 'dependency environments succeeded and soaked' };
  });
}
