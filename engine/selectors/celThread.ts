import './lowerThreadPriority';
import { parentPort } from 'node:worker_threads';
import { judgeRows, type RowBatch } from './celRows';

/** A thread of `CelThreads`: judges the batches of rows it is sent, one at a time, at a lower priority. */
parentPort!.on('message', (batch: RowBatch) => parentPort!.postMessage(judgeRows(batch)));
