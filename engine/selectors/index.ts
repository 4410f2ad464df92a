/** Selectors' front door: CEL judged in worker threads, compiled to SQL where it can be, paced and metered. */
export { judgeRows, recordOf, type RowShape, type StoredRow } from './celRows';
export { celPredicate } from './celSql';
export { CelThreads, celThreads } from './celThreads';
export { SLICE_MS, paced, type Pacer } from './pace';
export { recordSelectorOverruns, selectorWarnings, type SelectorWarning } from './selectorOverruns';
