/**
 * Ctrlplane's `planValidationOpa` policy rule: a Rego (v1) policy evaluated on what a release would
 * change on its target (its deployment plan, secrets redacted). Following the Conftest convention,
 * the policy defines a `deny` set of messages; any message blocks the release.
 *
 * The policy engine is reached through `RegoEngine` (cli/opa.ts runs Open Policy Agent), given to
 * the stores that check policies at write and to the activities that evaluate them.
 */

/** A Rego policy's size, at most. */
export const MAX_REGO_LENGTH = 64 * 1024;

export interface RegoEngine {
  /**
   * The engine for one request or one release evaluation of a workspace: its calls share the
   * workspace's part of the engine (no workspace holds all of it) and one budget of engine time.
   */
  session(workspaceId: string): RegoSession;
}

export interface RegoSession {
  /** Why the source is refused (a compile error, a missing `deny`, a forbidden builtin); undefined if fine. */
  check(source: string): Promise<string | undefined>;
  /** The messages of the policy's `deny` set for `input`, sorted. */
  deny(source: string, input: unknown): Promise<string[]>;
}

/** The outcome of one rule on one release: its messages, or why it could not be evaluated. */
export type PlanVerdict = { denials: string[] } | { error: string };

/** The package a Rego source declares (`package main` → `main`), whose `deny` is read. */
export function regoPackage(source: string): string | undefined {
  const match = /^\s*package\s+([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*$/m.exec(source);
  return match?.[1];
}

/** What the policy sees as `input`: the release's target and version, and its plan. */
export interface PlanValidationInput {
  deployment: { id: string; name: string; slug: string };
  environment: { id: string; name: string };
  resource: { id: string; name: string; identifier: string; kind: string };
  version: { id: string; tag: string; name: string };
  /** True if any job's rendered inputs differ from the running release's. */
  hasChanges: boolean;
  /** Per job of the release: its rendered configuration and variables (`proposed`) and the running one's (`current`). */
  results: { hasChanges: boolean; current: string; proposed: string; message: string | null }[];
}
