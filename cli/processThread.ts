import { parentPort } from 'node:worker_threads';
import { runBoundedProcess, type BoundedProcessRequest } from './boundedProcess';

/** The thread of `ProcessLauncher` (cli/processLauncher.ts): runs the processes it is sent, several at once. */
parentPort!.on('message', ({ id, request }: { id: number; request: BoundedProcessRequest }) => {
  runBoundedProcess(request).then(
    (outcome) => parentPort!.postMessage({ id, outcome }),
    (error: unknown) =>
      parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) }),
  );
});
