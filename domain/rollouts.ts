import type { z } from 'zod';
import type { WavesRule } from './policies';

/**
 * A version's rollout in waves (docs/behaviour.md "Rolling out to a fleet"): which wave a target
 * belongs to, and, from how each wave's targets stand, what the rollout does next. Pure: the
 * rollout's executor (engine/executor/rollouts.ts) reads the counts and applies the plan, its
 * workflow (workflows/rolloutWaves.ts) sleeps until the plan's next change.
 */

export type WavesSpec = z.output<typeof WavesRule>;

/** Where a rollout stands, as an operator or the rollout itself left it. */
export const ROLLOUT_STATES = ['running', 'paused', 'halted', 'aborted', 'completed'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

/** The name the targets no wave matches go under, last. */
export const REST_WAVE = 'rest';

/** The waves of a rule as a rollout runs them: the rule's, then the rest. */
export function waveNames(rule: WavesSpec): string[] {
  return [...rule.waves.map((wave) => wave.name), REST_WAVE];
}

/** The wave of a target: the first whose selector `matches` it, or the rest (the last index). */
export function waveOfTarget(rule: WavesSpec, matches: (selector: string) => boolean): number {
  const index = rule.waves.findIndex((wave) => matches(wave.selector));
  return index === -1 ? rule.waves.length : index;
}

/** How one wave's targets stand. */
export interface WaveCounts {
  /** Targets in the wave (members of the rollout so far). */
  total: number;
  /** Targets let through: their releases may start a job. */
  admitted: number;
  /** Admitted targets whose release has not ended. */
  active: number;
  succeeded: number;
  failed: number;
  /** Targets whose release ended, whatever the outcome. */
  ended: number;
  /** When the last of them ended. */
  lastEndedAt: string | null;
}

/** What a rollout knows of itself beyond its waves' counts. */
export interface RolloutStanding {
  state: RolloutState;
  /** The version's fan-out has created every release: no target joins a wave any more. */
  fanoutComplete: boolean;
  /** Failures in a row, the latest ended targets, since the rollout last resumed. */
  trailingFailures: number;
  /** Targets failed and run when the rollout last resumed: a halt counts what came after. */
  baseline: { failed: number; ran: number };
  /** The waves a person let start (`manualJudgement`). */
  judged: readonly number[];
  /** Since when the rollout waits for a judgement, if it does. */
  judgementSince: string | null;
}

export interface RolloutPlan {
  /** The wave the rollout is at (the rest, when every wave has ended). */
  wave: number;
  /** Targets of `wave` to admit now. */
  admit: number;
  /** The rollout stops here, for this reason. */
  halt?: string;
  /** Every wave has ended. */
  done: boolean;
  /** When the plan changes by itself (a bake ends, a judgement times out). */
  nextChangeAt?: string;
  /** The wave waits for a person's judgement (its index). */
  awaitingJudgement?: number;
  /** Why targets wait, as explain and the board say it. */
  reason: string;
}

/** At most how many of a wave's targets have an active job at once. */
export function waveCapacity(rule: WavesSpec, wave: number, total: number): number {
  const spec = rule.waves[wave];
  if (spec?.maxParallel !== undefined) return spec.maxParallel;
  if (spec?.maxPercent !== undefined) return Math.max(1, Math.floor((total * spec.maxPercent) / 100));
  return Math.max(total, 1);
}

/**
 * The halt the counts call for, if any, under the rule's `haltOn`, naming the wave that failed (the
 * last one with failures: waves run in order).
 */
export function haltReason(
  rule: WavesSpec,
  waves: readonly WaveCounts[],
  standing: RolloutStanding,
): string | undefined {
  if (!rule.haltOn) return undefined;
  const failing = waves.findLastIndex((wave) => wave.failed > 0);
  const waveName = waveNames(rule)[Math.max(0, failing)]!;
  const failed = sum(waves, 'failed') - standing.baseline.failed;
  const ran = sum(waves, 'succeeded') + sum(waves, 'failed') - standing.baseline.ran;
  const { failurePercent, consecutiveFailures } = rule.haltOn;
  if (failurePercent !== undefined && ran > 0 && (failed * 100) / ran >= failurePercent) {
    const share = Math.round((failed * 1000) / ran) / 10;
    return `halted: ${failed} of ${ran} targets failed in wave ${waveName} (${share} % ≥ ${failurePercent} %)`;
  }
  if (consecutiveFailures !== undefined && standing.trailingFailures >= consecutiveFailures) {
    return `halted: ${standing.trailingFailures} targets failed in a row in wave ${waveName} (≥ ${consecutiveFailures})`;
  }
  return undefined;
}

const sum = (waves: readonly WaveCounts[], field: 'failed' | 'succeeded') =>
  waves.reduce((total, wave) => total + wave[field], 0);

/**
 * What the rollout does next at `now`: the first wave that has not ended is the rollout's wave; it
 * starts once the wave before it (the last one with targets) has baked, and admits targets up to its
 * capacity. A wave has ended when the fan-out is complete and every target in it has ended. A halt
 * stops everything, a pause or abort too; the counts are read fresh each time.
 */
export function planRollout(
  rule: WavesSpec,
  waves: readonly WaveCounts[],
  standing: RolloutStanding,
  now: Date,
): RolloutPlan {
  const names = waveNames(rule);
  const current = waves.findIndex((wave) => !standing.fanoutComplete || wave.ended < wave.total);
  const wave = current === -1 ? names.length - 1 : current;
  const at = `wave ${names[wave]} (${wave + 1} of ${names.length})`;
  if (standing.state === 'aborted') return { wave, admit: 0, done: false, reason: 'the rollout was aborted' };
  if (standing.state === 'completed' || current === -1) {
    return { wave, admit: 0, done: true, reason: 'every wave has ended' };
  }
  const halt = standing.state === 'running' ? haltReason(rule, waves, standing) : undefined;
  if (halt) return { wave, admit: 0, halt, done: false, reason: halt };
  if (standing.state !== 'running') {
    return { wave, admit: 0, done: false, reason: `the rollout is ${standing.state} at ${at}` };
  }
  const counts = waves[wave]!;
  if (counts.admitted === 0) {
    const bakeEnd = bakeEndBefore(rule, waves, wave);
    if (bakeEnd !== undefined && bakeEnd > now.getTime()) {
      const until = new Date(bakeEnd).toISOString();
      return {
        wave,
        admit: 0,
        done: false,
        nextChangeAt: until,
        reason: `${at} starts when wave ${names[lastWithTargets(waves, wave)!]} has baked, at ${until}`,
      };
    }
  }
  const judgement = rule.waves[wave]?.manualJudgement;
  if (counts.admitted === 0 && judgement && !standing.judged.includes(wave)) {
    return awaitJudgement(wave, at, judgement.timeoutSeconds, standing.judgementSince, now);
  }
  const capacity = waveCapacity(rule, wave, counts.total);
  const admit = Math.max(0, Math.min(capacity - counts.active, counts.total - counts.admitted));
  const busy = counts.active + admit;
  return {
    wave,
    admit,
    done: false,
    reason:
      busy >= capacity
        ? `${at}: ${busy} of ${capacity} targets at once are busy`
        : `${at}: ${counts.ended} of ${counts.total} targets ended`,
  };
}

/** A wave that waits for a person: until the judgement's deadline, then halted. */
function awaitJudgement(
  wave: number,
  at: string,
  timeoutSeconds: number | undefined,
  since: string | null,
  now: Date,
): RolloutPlan {
  const deadline =
    timeoutSeconds === undefined ? undefined : Date.parse(since ?? now.toISOString()) + timeoutSeconds * 1000;
  if (deadline !== undefined && deadline <= now.getTime()) {
    const halt = `halted: no judgement for ${at} within ${timeoutSeconds} s`;
    return { wave, admit: 0, halt, done: false, reason: halt };
  }
  return {
    wave,
    admit: 0,
    done: false,
    awaitingJudgement: wave,
    reason: `${at} waits for a judgement: continue or roll back`,
    ...(deadline !== undefined ? { nextChangeAt: new Date(deadline).toISOString() } : {}),
  };
}

/** The last wave before `wave` that has targets. */
function lastWithTargets(waves: readonly WaveCounts[], wave: number): number | undefined {
  for (let earlier = wave - 1; earlier >= 0; earlier--) if (waves[earlier]!.total > 0) return earlier;
  return undefined;
}

/** When the bake of the last wave with targets before `wave` ends, if it has one. */
function bakeEndBefore(rule: WavesSpec, waves: readonly WaveCounts[], wave: number): number | undefined {
  const earlier = lastWithTargets(waves, wave);
  if (earlier === undefined) return undefined;
  const bakeSeconds = rule.waves[earlier]?.bakeSeconds;
  const endedAt = waves[earlier]!.lastEndedAt;
  return bakeSeconds && endedAt ? Date.parse(endedAt) + bakeSeconds * 1000 : undefined;
}

/** What a release under a waves rule reads: its place in the rollout, by rule id. */
export interface RolloutMembership {
  rolloutId: string;
  wave: number;
  waveName: string;
  waveCount: number;
  admitted: boolean;
  state: RolloutState;
  /** The rollout's own account of why it waits (`RolloutPlan.reason`). */
  reason: string;
}
