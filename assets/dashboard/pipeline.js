// What the page knows of the pipeline, all of it from GET /_sim/pipeline (read at every
// (re)load): the stages in order, the status a generation shows in each, which stages may be
// canceled and the failure codes of each. Nothing here restates the service's rules.

/** The stages in order: [{ name, status, fills, failable, cancelable, failure_codes }]. */
let stages = [];
/** What follows from them, worked out once per (re)load: the timed stages and the in-flight statuses. */
let timed = [];
let inFlight = [];

export function learnPipeline(data) {
  stages = data;
  timed = stages.filter((stage) => stage.status !== null);
  inFlight = [...new Set(timed.map((stage) => stage.status))];
}

export const pipelineStages = () => stages;

/** The stages a generation spends time in (all but claim linking, which has no status). */
export const timedStages = () => timed;

/** The statuses of a generation in flight, in pipeline order (`queued`, `processing`, `verifying`). */
export const inFlightStatuses = () => inFlight;

export const isInFlight = (g) => inFlight.includes(g.status);

/** The stages a generation can be made to fail at (a queued fault's `outcome.fail_stage`). */
export const failableStages = () => stages.filter((stage) => stage.failable);

/** Whether a generation can still be canceled: its status is that of a cancelable stage. */
export const isCancelable = (g) => stages.some((stage) => stage.cancelable && stage.status === g.status);

/** The codes a generation failed at `name` can carry (empty where it cannot fail). */
export const failureCodesOf = (name) => stages.find((stage) => stage.name === name)?.failure_codes ?? [];
