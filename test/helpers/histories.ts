import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowClient, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
const { History } = temporal.api.history.v1;

/**
 * Recorded workflow histories: `npm run histories:record` runs the workflow tests with
 * RECORD_HISTORIES=1, and each scenario that names a fixture writes every run of its workflow
 * (a continued-as-new workflow has several) to test/fixtures/histories/<name>.json. The replay
 * test runs them all against the current workflow bundle.
 */
export const HISTORIES_DIR = path.join(__dirname, '..', 'fixtures', 'histories');

export interface RecordedWorkflow {
  workflowId: string;
  workflowType: string;
  /** One history per run, first run first, as protobuf.js writes it as JSON. */
  runs: unknown[];
}

export const recording = process.env.RECORD_HISTORIES === '1';

/** Writes the fixture `name` from the workflow's runs, following continue-as-new from its first run. */
export async function recordHistory(
  client: WorkflowClient,
  handle: WorkflowHandleWithFirstExecutionRunId,
  name: string,
): Promise<void> {
  if (!recording) return;
  const runs: History[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const history = await client.getHandle(handle.workflowId, runId).fetchHistory();
    runs.push(history);
    runId =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  const workflowType =
    runs[0]?.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? 'unknown';
  const recorded: RecordedWorkflow = {
    workflowId: handle.workflowId,
    workflowType,
    runs: runs.map((run) => History.fromObject(run).toJSON()),
  };
  await mkdir(HISTORIES_DIR, { recursive: true });
  await writeFile(path.join(HISTORIES_DIR, `${name}.json`), `${JSON.stringify(recorded, null, 1)}\n`);
}

/**
 * For a test file whose scenarios start workflows: each workflow handed to the returned function
 * is recorded as its fixture after the test that started it, whatever its outcome.
 */
export function recordAfterEach(
  client: () => WorkflowClient,
): (handle: WorkflowHandleWithFirstExecutionRunId, fixture: string) => void {
  const started: { handle: WorkflowHandleWithFirstExecutionRunId; fixture: string }[] = [];
  afterEach(async () => {
    for (const { handle, fixture } of started.splice(0)) await recordHistory(client(), handle, fixture);
  });
  return (handle, fixture) => {
    started.push({ handle, fixture });
  };
}

/** Every recorded fixture, by file name. */
export async function recordedHistories(): Promise<
  { name: string; recorded: RecordedWorkflow; runs: History[] }[]
> {
  const names = (await readdir(HISTORIES_DIR)).filter((name) => name.endsWith('.json')).sort();
  return Promise.all(
    names.map(async (name) => {
      const recorded = JSON.parse(await readFile(path.join(HISTORIES_DIR, name), 'utf8')) as RecordedWorkflow;
      return {
        name,
        recorded,
        runs: recorded.runs.map((run) => History.fromObject(run as Record<string, unknown>)),
      };
    }),
  );
}

/** What an event runs or records: an activity's type (ordinary or local), a timer's id, a signal's name. */
function eventSubject(event: temporal.api.history.v1.IHistoryEvent): string | undefined {
  const scheduled = event.activityTaskScheduledEventAttributes?.activityType?.name;
  if (scheduled) return scheduled;
  const marker = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
  if (marker)
    return (JSON.parse(Buffer.from(marker).toString('utf8')) as { activity_type?: string }).activity_type;
  return (
    event.timerStartedEventAttributes?.timerId ??
    event.workflowExecutionSignaledEventAttributes?.signalName ??
    undefined
  );
}

/**
 * A replay failure in a line: the SDK's nondeterminism message and the history event it names
 * (the first event that runs or records the activity, timer or signal it quotes).
 */
export function describeReplayFailure(history: History, error: Error): string {
  const message = /\[TMPRL\d+\][^"\\]*/.exec(error.message)?.[0] ?? error.message;
  const quoted = /'([^']+)'/.exec(message)?.[1];
  const event = quoted ? history.events?.find((candidate) => eventSubject(candidate) === quoted) : undefined;
  if (!event) return message;
  const type = temporal.api.enums.v1.EventType[Number(event.eventType)] ?? String(event.eventType);
  return `${message} (history event ${String(event.eventId)}, ${type}, '${quoted}')`;
}
