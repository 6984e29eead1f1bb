/**
 * Claim linking (pipeline stage 1, synchronous, interface document 7.2): a create whose prompt a
 * scenario rule matches, or that the scenario's probability draws, is rejected with 422
 * `compliance_error` / `claim_linking_rejected`, stage `claim_linking`.
 */
import { SimError } from '../errors.js';
import type { ForcedOutcome } from './fate.js';
import { createStream } from '../random.js';
import type { Scenario } from '../scenario/scenario.js';

/**
 * Throws the 422 when claim linking rejects the request. It judges the request, not the attempt:
 * the draw comes from a stream keyed by the account and the request's content (prompt and negative
 * prompt, normalised for case and white space), so an unchanged retry of a rejected create is
 * rejected again, and a changed prompt is judged anew.
 */
export function checkClaimLinking(
  scenario: Scenario,
  seed: number,
  accountKey: string,
  content: readonly [prompt: string, negativePrompt?: string | null],
  forced: ForcedOutcome | null,
): void {
  const { rules, probability } = scenario.compliance.claim_linking;
  const prompt = content[0];
  if (forced?.claim_linking_rejected) {
    throw rejected('The prompt was rejected by claim linking (forced by a queued fault).');
  }
  for (const [rule, pattern] of compiled(rules)) {
    if (pattern.test(prompt)) {
      throw rejected(rule.message ?? `The prompt was rejected by claim linking (it matches the scenario rule /${rule.pattern}/i).`);
    }
  }
  if (!(probability > 0)) return;
  const normalised = content.map((text) => (text ?? '').trim().replace(/\s+/g, ' ').toLowerCase());
  if (createStream(seed, accountKey, 'claim_linking', ...normalised).next() < probability) {
    throw rejected(`The prompt was rejected by claim linking (injected by scenario '${scenario.name}', probability ${probability}).`);
  }
}

type Rules = Scenario['compliance']['claim_linking']['rules'];

/** Each rule with its pattern compiled, once per scenario (a reset loads another scenario object). */
const COMPILED = new WeakMap<Rules, [Rules[number], RegExp][]>();

function compiled(rules: Rules): [Rules[number], RegExp][] {
  let found = COMPILED.get(rules);
  if (found === undefined) {
    found = rules.map((rule) => [rule, new RegExp(rule.pattern, 'i')]);
    COMPILED.set(rules, found);
  }
  return found;
}

function rejected(message: string): SimError {
  return new SimError('claim_linking_rejected', { stage: 'claim_linking', message });
}
