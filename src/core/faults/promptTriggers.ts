/**
 * Prompt triggers: the prompt of a create (`POST /v1/videos`, `POST /v1/images`) chooses its own
 * outcome, as a test card number does, for a person who cannot send control requests. A prompt
 * that holds `[sim:DIRECTIVE]` gets what the equivalent queued fault (`faults.ts`) gives:
 *
 *   [sim:fail=keyframe|routing|render]  outcome `fail_stage`
 *   [sim:reject=claim_linking]          outcome `claim_linking_rejected` (a 422 at create)
 *   [sim:reject=output]                 outcome `output_rejected`
 *   [sim:flag=CODE]                     outcome `flags`: a `warning` flag with that code
 *   [sim:error=402|429|500]             `status`: the create is answered with that injected error
 *
 * Everything that starts with `[sim:` is read as a trigger (case-sensitive): up to the next `]`
 * it must be exactly one of the directives above, or the create is 400 `invalid_parameter`, param
 * `prompt`. Several directives combine into one forced outcome, as one queued fault's fields do;
 * two that contradict each other (two fail stages, two error statuses) are 400. The prompt itself
 * is stored and answered as sent. A scenario's `prompt_triggers: false` reads none of it.
 */
import { SimError, clip, fail } from '../errors.js';
import type { ComplianceFlag, ForcedOutcome } from '../generations/fate.js';
import { faultError } from './faults.js';
import { queuedFaultError } from './injection.js';

/** What every trigger starts with; text that does not is never one. */
const TRIGGER_OPENER = '[sim:';

/** The directives, as the docs, the dashboard and a refused trigger's message list them. */
export const PROMPT_DIRECTIVES: readonly string[] = [
  '[sim:fail=keyframe]',
  '[sim:fail=routing]',
  '[sim:fail=render]',
  '[sim:reject=claim_linking]',
  '[sim:reject=output]',
  '[sim:flag=CODE]',
  '[sim:error=402]',
  '[sim:error=429]',
  '[sim:error=500]',
];

/** The statuses `[sim:error=STATUS]` takes: those a create documents for an injected error. */
const TRIGGER_ERROR_STATUSES: readonly number[] = [402, 429, 500];

/** At most this many distinct `[sim:flag=CODE]`, as a queued fault's outcome holds at most this many flags. */
const MAX_TRIGGER_FLAGS = 3;

/** The shape of a flag's CODE: as every code of the service, lowercase letters, digits and `_`. */
const FLAG_CODE = /^[a-z0-9_]{1,100}$/;

const DIRECTIVE = /^\[sim:(?:fail=(keyframe|routing|render)|reject=(claim_linking|output)|flag=([^\]]*)|error=([^\]]*))\]$/;

/** The triggers a prompt holds, combined. */
export interface PromptTrigger {
  /** The directives as written, in the order they first appear (a repeated one once). */
  directives: string[];
  /** The error the create is answered with (that of a queued fault with the status), or null. */
  error: SimError | null;
  /** The outcome forced on what the create makes, or null when the directives force none. */
  outcome: ForcedOutcome | null;
}

/** The compliance flag `[sim:flag=CODE]` forces. */
function triggerFlag(code: string): ComplianceFlag {
  return { code, severity: 'warning', message: `Flagged by the prompt trigger [sim:flag=${code}].` };
}

/**
 * The triggers `prompt` holds: null when it holds none (no `[sim:`), a 400 when one is unknown,
 * malformed or contradicts another, else the directives combined.
 */
export function readPromptTrigger(prompt: string): PromptTrigger | SimError | null {
  let at = prompt.indexOf(TRIGGER_OPENER);
  if (at < 0) return null;
  const directives: string[] = [];
  let failStage: { stage: NonNullable<ForcedOutcome['fail_stage']>; written: string } | undefined;
  let errorStatus: { status: number; written: string } | undefined;
  let claimLinking = false;
  let output = false;
  const flags: ComplianceFlag[] = [];
  while (at >= 0) {
    const close = prompt.indexOf(']', at + TRIGGER_OPENER.length);
    if (close < 0) return refused(`The prompt holds a trigger with no closing bracket: '${clip(prompt.slice(at))}'.`);
    const written = prompt.slice(at, close + 1);
    at = prompt.indexOf(TRIGGER_OPENER, close + 1);
    if (directives.includes(written)) continue;
    const match = DIRECTIVE.exec(written);
    if (match === null) return refused(`The prompt holds an unknown trigger '${clip(written)}'.`);
    const [, stage, reject, flag, status] = match;
    if (stage !== undefined) {
      if (failStage !== undefined) return conflict(failStage.written, written, 'a generation fails at one stage');
      failStage = { stage: stage as NonNullable<ForcedOutcome['fail_stage']>, written };
    } else if (reject !== undefined) {
      if (reject === 'claim_linking') claimLinking = true;
      else output = true;
    } else if (flag !== undefined) {
      if (!FLAG_CODE.test(flag)) return refused(`The prompt holds an unknown trigger '${clip(written)}': CODE is 1 to 100 lowercase letters, digits and _.`);
      if (flags.length === MAX_TRIGGER_FLAGS) {
        return fail('invalid_parameter', {
          param: 'prompt',
          message: `The prompt holds more than ${MAX_TRIGGER_FLAGS} [sim:flag=CODE] triggers ('${clip(written)}' is one too many); a forced outcome carries at most ${MAX_TRIGGER_FLAGS} flags.`,
        });
      }
      flags.push(triggerFlag(flag));
    } else {
      const code = Number(status);
      if (!TRIGGER_ERROR_STATUSES.includes(code) || String(code) !== status) {
        return refused(`The prompt holds an unknown trigger '${clip(written)}': a create's injected error is ${TRIGGER_ERROR_STATUSES.join(', ')}.`);
      }
      if (errorStatus !== undefined) return conflict(errorStatus.written, written, 'a create is answered with one error');
      errorStatus = { status: code, written };
    }
    directives.push(written);
  }
  const outcome: ForcedOutcome = {};
  if (failStage !== undefined) outcome.fail_stage = failStage.stage;
  if (claimLinking) outcome.claim_linking_rejected = true;
  if (output) outcome.output_rejected = true;
  if (flags.length > 0) outcome.flags = flags;
  return {
    directives,
    error: errorStatus === undefined ? null : queuedFaultError(faultError({ path: '' }, errorStatus.status)),
    outcome: Object.keys(outcome).length > 0 ? outcome : null,
  };
}

/** The 400 of a trigger that is none of the directives, with the list of those. */
function refused(what: string): SimError {
  return fail('invalid_parameter', {
    param: 'prompt',
    message: `${what} The known triggers are ${PROMPT_DIRECTIVES.join(', ')}; any text that starts with ${TRIGGER_OPENER} is read as one.`,
  });
}

/** The 400 of two directives that cannot both hold. */
function conflict(first: string, second: string, why: string): SimError {
  return fail('invalid_parameter', {
    param: 'prompt',
    message: `The prompt's triggers ${first} and ${clip(second)} contradict each other (${why}); keep one of them.`,
  });
}
