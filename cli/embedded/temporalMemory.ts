/**
 * The Go memory limit `flightdeck start` gives the dev server. Go's collector otherwise lets the heap
 * grow to twice what it holds live and gives little back when idle; under a limit it collects
 * sooner and returns the rest to the system. Its RSS is this plus the binary's code (about 100 MB).
 * bench/pull (a 10,000-target fan-out, then idle): peak RSS 614–648 MB and 585–648 idle without it,
 * 400 and 395 with 300, claims no slower; a 10,000-target fan-out behind a backlog of trailing
 * starts about 2 s slower, on a fresh stack no slower (ARCHITECTURE.md, "The embedded Temporal
 * server").
 */
export const DEFAULT_TEMPORAL_MEMORY_LIMIT_MB = 300;
