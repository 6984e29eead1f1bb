/**
 * The simulator's assumptions about the real service, by the id each carries in `openapi.yaml`
 * (`x-sim-assumption`), in the order of that file. Each says, in a line, what the simulator bets;
 * those that no probe can put to a service without spending money or waiting say why, and the
 * drift check reports them as `not_observed` with that reason. The table is data:
 * `assumptions.yaml` beside this file, checked against openapi.yaml and compiled by the build.
 */
import { createRequire } from 'node:module';

export interface Assumption {
  id: string;
  /** What the simulator assumes, in a line. */
  says: string;
  /** Set when the drift check never probes it: why it cannot be observed. */
  notObserved?: string;
}

export const ASSUMPTIONS: readonly Assumption[] = createRequire(import.meta.url)('../generated/assumptions.json') as Assumption[];

/** The row for every answer checked against openapi.yaml with the simulator's compiled validators. */
export const SCHEMA_ROW = 'contract.schema';
