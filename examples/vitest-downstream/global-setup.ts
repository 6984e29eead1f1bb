/**
 * One simulator for the whole test run, shared by every test file and worker. Tests isolate
 * themselves with their own API key (each key is its own account with its own clock), so they run
 * in parallel without seeing each other's videos, faults or clock advances.
 */
import { createSimulator } from 'video-service-sim';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    simUrl: string;
  }
}

export default async function setup(project: TestProject) {
  // `fast`: every generation resolves within 10 virtual seconds; `manual`: time moves only when a
  // test advances it, so nothing depends on the machine's speed.
  const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
  project.provide('simUrl', await sim.listen(0));
  return () => sim.close();
}
