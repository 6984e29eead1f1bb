/**
 * The programmatic API, for test runners that run the simulator in-process:
 *
 * ```ts
 * import { createSimulator } from 'video-service-sim';
 * const sim = createSimulator({ scenario: 'fast', clock: 'manual' });
 * const url = await sim.listen(0);           // or: supertest(sim.app)
 * // ... create a video with fetch(`${url}/v1/videos`, ...)
 * sim.clock.advance(10);                     // every due transition is applied
 * await sim.close();
 * ```
 */

export { openapiPath } from './openapi.js';
export { hostClockOf, systemClock, type HostClock, type HostTimer, type TimerFunctions } from './hostClock.js';
export { ERROR_CATALOGUE, ERROR_CODES, type ErrorBody } from './core/errors.js';
export type { ApiError, CancelResponse, ErrorCode, Image, Video, VideoList, VideoStatus } from './api-types.js';
export { loadScenario, listBundledScenarios, validateScenarioFile, ScenarioError } from './scenarios/load.js';
export type { Scenario } from './core/scenario/scenario.js';
export { parseShard, ShardSpecError, type ShardSpec } from './core/accounts/shard.js';
export type { VideoView } from './core/generations/generation.js';
export type { ClientReport, ClientFinding, FindingCode } from './core/journal/clientReport.js';
export { Simulator } from './core/simulator/simulator.js';
export { SimulatorControl, SimulatorControlError, VerificationError, type SimulatorControlOptions } from './control-client/client.js';
export { SimulatorShardsError, type ShardedHealth } from './control-client/shards.js';
export { StateRefusedError } from './persistence/open.js';
export type { StateStatus } from './persistence/stateStore.js';
export type {
  ControlMethods,
  GenerationListOptions,
  RequestPattern,
  ResetOptions,
  SimClientReport,
  SimClock,
  SimFaultList,
  SimFaultQueued,
  SimFaultRequest,
  SimGeneration,
  SimGenerationList,
  SimHealth,
  SimJournalEntry,
  SimulatorControlApi,
  SimVerification,
  SimWaitAnswer,
  VerifyTimes,
  WaitOptions,
} from './control-client/endpoints.js';
export {
  createSimulator,
  defaultBaseUrl,
  DEFAULT_DRAIN_GRACE_MS,
  type CreateSimulatorOptions,
  type SimulatorHandle,
  type Stopped,
} from './createSimulator.js';
