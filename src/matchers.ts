/**
 * `video-service-sim/matchers`: matchers for Vitest's and Jest's `expect.extend`, over any control
 * of a simulator (`SimulatorControl`, the in-process handle of `createSimulator`, the `control` of
 * `video-service-sim/msw`, a control over shards):
 *
 * ```ts
 * import { requestMatchers, type RequestMatchers } from 'video-service-sim/matchers';
 * expect.extend(requestMatchers);
 * declare module 'vitest' { interface Matchers<T = any> extends RequestMatchers<T> {} }
 *
 * await expect(control).toHaveReceivedRequest({ method: 'POST', path: '/v1/videos', idempotency_key: true });
 * await expect(control).toHaveReceivedRequest({ path: '/v1/videos/*', seen: 'succeeded' }, { at_least: 1 });
 * await expect(control).not.toHaveReceivedRequest({ method: 'POST', idempotency_key: false });
 * ```
 *
 * Each is `POST /_sim/verify`; a failure's message is the verification's sentence followed by the
 * journal entries nearest the pattern (see `VerificationError`). With `.not` and no `times`, it
 * verifies that no request matched (`{ at_most: 0 }`), so a journal that dropped requests fails it
 * rather than passing it silently.
 */
import type { RequestPattern, SimVerification, VerifyTimes } from './control-client/endpoints.js';
import { VerificationError, expectedInWords } from './control-client/verificationError.js';

export type { RequestPattern, VerifyTimes } from './control-client/endpoints.js';
export { VerificationError } from './control-client/verificationError.js';

/** The matchers' types, for `declare module 'vitest' { interface Matchers<T> extends RequestMatchers<T> {} }` (Jest: `namespace jest { interface Matchers<R> ... }`). */
export interface RequestMatchers<R = unknown> {
  /** That the journal holds `times` requests matching `pattern` (default at least 1); with `.not`, none. Await it. */
  toHaveReceivedRequest(pattern: RequestPattern, times?: VerifyTimes): Promise<R>;
}

/** What the matchers ask of the value under test: a control's `verify`. */
export interface VerifyingControl {
  verify(pattern: RequestPattern, times?: VerifyTimes): SimVerification | Promise<SimVerification>;
}

/** What Vitest and Jest give a matcher as `this` (the part read here). */
interface MatcherContext {
  isNot?: boolean;
}

interface MatcherResult {
  pass: boolean;
  message(): string;
}

/** The outcome of a verification: whether it held, how many matched, and the failure's text. */
async function verification(control: VerifyingControl, pattern: RequestPattern, times: VerifyTimes | undefined): Promise<{ verified: boolean; count: number; text: string }> {
  try {
    const answer = await control.verify(pattern, times);
    return { verified: true, count: answer.count, text: '' };
  } catch (e) {
    if (e instanceof VerificationError) return { verified: false, count: e.count, text: e.message };
    throw e;
  }
}

export const requestMatchers = {
  async toHaveReceivedRequest(this: MatcherContext, control: unknown, pattern: RequestPattern, times?: VerifyTimes): Promise<MatcherResult> {
    if (typeof (control as VerifyingControl | null)?.verify !== 'function') {
      throw new TypeError(
        'toHaveReceivedRequest expects a simulator control (SimulatorControl, the handle of createSimulator, the control of video-service-sim/msw), got ' +
          `${control === null ? 'null' : typeof control}.`,
      );
    }
    const verifier = control as VerifyingControl;
    if (this.isNot && times === undefined) {
      // `.not`: no request matched. The matcher passes (and `.not` fails) when that does not hold.
      const none = await verification(verifier, pattern, { at_most: 0 });
      return { pass: !none.verified, message: () => none.text };
    }
    const result = await verification(verifier, pattern, times);
    if (this.isNot) {
      const expected = expectedInWords(times ?? { at_least: 1 });
      return { pass: result.verified, message: () => `Expected other than ${expected} matching ${JSON.stringify(pattern)}; found ${result.count}.` };
    }
    return { pass: result.verified, message: () => result.text };
  },
};

