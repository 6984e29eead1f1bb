/**
 * The checks of a resolved scenario that its schema cannot state.
 */
import type { Distribution } from './distribution.js';
import { SimError } from '../errors.js';
import { NETWORK_KINDS, networkFault } from '../faults/network.js';
import { PROCESSING_STAGES, type Scenario } from './scenario.js';

/**
 * Checks a resolved scenario for what a schema cannot say (ranges that are upside down, patterns
 * that do not compile, unknown error codes). Returns problems as `field: what was expected`.
 */
export function checkScenario(s: Scenario, apiErrorCodes: readonly string[], failableStages: readonly string[]): string[] {
  const problems: string[] = [];
  const checkDistribution = (path: string, d: Distribution | null) => {
    if (!d) return;
    if (d.type === 'uniform' && d.min > d.max) problems.push(`${path}: expected min <= max, got min ${d.min} and max ${d.max}`);
    if (d.type === 'lognormal') {
      if (d.p95 < d.median) problems.push(`${path}: expected p95 >= median, got median ${d.median} and p95 ${d.p95}`);
      if (d.min !== undefined && d.max !== undefined && d.min > d.max) problems.push(`${path}: expected min <= max`);
    }
  };
  for (const stage of PROCESSING_STAGES) {
    const spec = s.stages[stage];
    checkDistribution(`stages.${stage}.duration`, spec.duration);
    if (spec.failure && !failableStages.includes(stage)) {
      problems.push(
        `stages.${stage}.failure: only ${failableStages.join(', ')} can fail${stage === 'output_verification' ? ' (for output rejections use compliance.output_verification.reject_share)' : ''}`,
      );
    }
    if (spec.failure && !apiErrorCodes.includes(spec.failure.code)) {
      problems.push(`stages.${stage}.failure.code: expected one of ${apiErrorCodes.join(', ')}, got '${spec.failure.code}'`);
    }
    if (spec.per_output_second && stage !== 'render') problems.push(`stages.${stage}.per_output_second: only the render stage scales per output second`);
  }
  checkDistribution('http.latency', s.http.latency);
  s.http.faults.forEach((rule, i) => {
    const at = `http.faults[${i}]`;
    if ((rule.status === undefined) === (rule.network === undefined)) {
      problems.push(`${at}: expected either status (an error) or network (a network failure), ${rule.status === undefined ? 'got neither' : 'not both'}`);
      return;
    }
    // An unknown kind is the schema's to name.
    if (rule.network != null && !(NETWORK_KINDS as readonly string[]).includes(rule.network)) return;
    try {
      networkFault(rule);
    } catch (e) {
      if (!(e instanceof SimError)) throw e;
      problems.push(`${at}.${e.param as string}: ${e.message}`);
    }
  });
  s.compliance.claim_linking.rules.forEach((rule, i) => {
    try {
      new RegExp(rule.pattern, 'i');
    } catch (e) {
      problems.push(`compliance.claim_linking.rules[${i}].pattern: expected a valid regular expression, got '${rule.pattern}' (${(e as Error).message})`);
    }
  });
  if (s.clock.start !== null && Number.isNaN(Date.parse(s.clock.start))) problems.push(`clock.start: expected an ISO 8601 date-time, got '${s.clock.start}'`);
  const ov = s.compliance.output_verification;
  if (ov.flag_share > 0 && !ov.flags.some((f) => f.severity !== 'block')) {
    problems.push('compliance.output_verification.flags: expected at least one info or warning flag when flag_share > 0');
  }
  return problems;
}
