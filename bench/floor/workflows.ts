import { proxySinks, type Sinks } from '@temporalio/workflow';

export interface FloorSinks extends Sinks {
  floor: { completed(): void };
}

const { floor } = proxySinks<FloorSinks>();

/**
 * The floor of the fan-out benchmark: a workflow that does nothing, started and completed once per
 * target. It tells the benchmark it completed through a sink, which costs the server nothing.
 */
export async function floorWorkflow(): Promise<void> {
  floor.completed();
}
