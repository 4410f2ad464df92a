import {
  planRollout,
  waveCapacity,
  waveOfTarget,
  type RolloutStanding,
  type WaveCounts,
  type WavesSpec,
} from '../../domain/rollouts';

const NOW = new Date('2026-11-19T12:00:00Z');
const seconds = (n: number) => new Date(NOW.getTime() + n * 1000).toISOString();

const RULE: WavesSpec = {
  waves: [
    { name: 'canary', selector: 'canary', bakeSeconds: 60 },
    { name: 'eu', selector: 'eu', maxParallel: 2, bakeSeconds: 30 },
    { name: 'us', selector: 'us', maxPercent: 50 },
  ],
  haltOn: { failurePercent: 20, consecutiveFailures: 3 },
};

const counts = (over: Partial<WaveCounts> = {}): WaveCounts => ({
  total: 0,
  admitted: 0,
  active: 0,
  succeeded: 0,
  failed: 0,
  ended: 0,
  lastEndedAt: null,
  ...over,
});
const ended = (total: number, at: string, failed = 0): WaveCounts =>
  counts({ total, admitted: total, succeeded: total - failed, failed, ended: total, lastEndedAt: at });

const standing = (over: Partial<RolloutStanding> = {}): RolloutStanding => ({
  state: 'running',
  fanoutComplete: true,
  trailingFailures: 0,
  baseline: { failed: 0, ran: 0 },
  judged: [],
  judgementSince: null,
  ...over,
});

describe('a rollout in waves', () => {
  it('puts a target in the first wave whose selector matches it, the rest last', () => {
    expect(waveOfTarget(RULE, (selector) => selector === 'eu' || selector === 'us')).toBe(1);
    expect(waveOfTarget(RULE, () => false)).toBe(3);
  });

  it('caps a wave by maxParallel, or by maxPercent of its targets (at least one), or not at all', () => {
    expect(waveCapacity(RULE, 1, 10)).toBe(2);
    expect(waveCapacity(RULE, 2, 7)).toBe(3);
    expect(waveCapacity(RULE, 2, 1)).toBe(1);
    expect(waveCapacity(RULE, 0, 4)).toBe(4);
  });

  it('admits the first wave at once, up to its capacity', () => {
    const plan = planRollout(
      RULE,
      [counts({ total: 1 }), counts({ total: 5 }), counts(), counts()],
      standing(),
      NOW,
    );
    expect(plan).toMatchObject({ wave: 0, admit: 1, done: false });
  });

  it('keeps a wave open while the fan-out may still add targets to it', () => {
    const plan = planRollout(
      RULE,
      [ended(1, seconds(-600)), counts({ total: 3 }), counts(), counts()],
      standing({ fanoutComplete: false }),
      NOW,
    );
    expect(plan).toMatchObject({ wave: 0, admit: 0 });
  });

  it('starts the next wave only when the one before has baked, and says until when', () => {
    const waves = [ended(1, seconds(-10)), counts({ total: 5 }), counts({ total: 4 }), counts()];
    expect(planRollout(RULE, waves, standing(), NOW)).toEqual({
      wave: 1,
      admit: 0,
      done: false,
      nextChangeAt: seconds(50),
      reason: `wave eu (2 of 4) starts when wave canary has baked, at ${seconds(50)}`,
    });
    const baked = planRollout(RULE, [ended(1, seconds(-61)), ...waves.slice(1)], standing(), NOW);
    expect(baked).toMatchObject({ wave: 1, admit: 2 });
  });

  it('fills freed slots of a started wave, and never more than its capacity', () => {
    const eu = counts({ total: 5, admitted: 3, active: 2, succeeded: 1, ended: 1 });
    const plan = planRollout(
      RULE,
      [ended(1, seconds(-600)), eu, counts({ total: 4 }), counts()],
      standing(),
      NOW,
    );
    expect(plan).toMatchObject({
      wave: 1,
      admit: 0,
      reason: 'wave eu (2 of 4): 2 of 2 targets at once are busy',
    });
    const freed = { ...eu, active: 1, succeeded: 2, ended: 2 };
    expect(
      planRollout(RULE, [ended(1, seconds(-600)), freed, counts(), counts()], standing(), NOW).admit,
    ).toBe(1);
  });

  it('skips empty waves, and the bake of a wave that had no targets', () => {
    const plan = planRollout(
      RULE,
      [ended(1, seconds(-600)), counts(), counts({ total: 4 }), counts()],
      standing(),
      NOW,
    );
    expect(plan).toMatchObject({ wave: 2, admit: 2 });
  });

  it('halts when the share of failed targets reaches failurePercent, naming the wave that failed', () => {
    const plan = planRollout(
      RULE,
      [ended(1, seconds(-600)), ended(4, seconds(-5), 1), counts({ total: 4 }), counts()],
      standing(),
      NOW,
    );
    expect(plan).toMatchObject({
      admit: 0,
      halt: 'halted: 1 of 5 targets failed in wave eu (20 % ≥ 20 %)',
    });
  });

  it('halts on failures in a row, and counts only what came after a resume', () => {
    const waves = [ended(1, seconds(-600)), ended(2, seconds(-60), 2), counts({ total: 4 }), counts()];
    expect(planRollout(RULE, waves, standing({ trailingFailures: 3 }), NOW).halt).toBe(
      'halted: 2 of 3 targets failed in wave eu (66.7 % ≥ 20 %)',
    );
    const resumed = standing({ baseline: { failed: 2, ran: 3 } });
    expect(planRollout(RULE, waves, resumed, NOW)).toMatchObject({ wave: 2, admit: 2 });
    const inARow = { ...RULE, haltOn: { consecutiveFailures: 3 } };
    expect(planRollout(inARow, waves, standing({ trailingFailures: 3 }), NOW).halt).toBe(
      'halted: 3 targets failed in a row in wave eu (≥ 3)',
    );
  });

  it('holds a wave with manualJudgement until a person judged it, and halts when none did in time', () => {
    const rule: WavesSpec = {
      waves: [
        { name: 'canary', selector: 'canary' },
        { name: 'eu', selector: 'eu', manualJudgement: { timeoutSeconds: 600 } },
      ],
    };
    const waves = [ended(1, seconds(-60)), counts({ total: 3 }), counts()];
    expect(planRollout(rule, waves, standing(), NOW)).toEqual({
      wave: 1,
      admit: 0,
      done: false,
      awaitingJudgement: 1,
      nextChangeAt: seconds(600),
      reason: 'wave eu (2 of 3) waits for a judgement: continue or roll back',
    });
    expect(planRollout(rule, waves, standing({ judgementSince: seconds(-300) }), NOW).nextChangeAt).toBe(
      seconds(300),
    );
    expect(planRollout(rule, waves, standing({ judgementSince: seconds(-600) }), NOW).halt).toBe(
      'halted: no judgement for wave eu (2 of 3) within 600 s',
    );
    expect(planRollout(rule, waves, standing({ judged: [1] }), NOW)).toMatchObject({ wave: 1, admit: 3 });
  });

  it('admits nothing while paused, halted or aborted, and is done when every wave has ended', () => {
    const waves = [counts({ total: 1 }), counts(), counts(), counts()];
    expect(planRollout(RULE, waves, standing({ state: 'paused' }), NOW)).toMatchObject({
      admit: 0,
      reason: 'the rollout is paused at wave canary (1 of 4)',
    });
    expect(planRollout(RULE, waves, standing({ state: 'aborted' }), NOW).admit).toBe(0);
    const all = [ended(1, seconds(-600)), ended(2, seconds(-60)), counts(), counts()];
    expect(planRollout(RULE, all, standing(), NOW)).toMatchObject({ done: true, admit: 0 });
  });
});
