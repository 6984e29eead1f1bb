/**
 * What a YAML file's aliases would make of it, checked on the parsed document before it becomes a
 * value: an alias that names no anchor before it, one inside the very value its anchor names (a
 * value that contains itself), and aliases that together repeat more than `MAX_ALIAS_VALUES`
 * values (a "billion laughs" file: nine lines that expand to 10^9). Each is a problem at the
 * alias's place, never a crash.
 */
import type { Document, Node as YamlNode } from 'yaml';

/** The most values a file's aliases may repeat, in all. A scenario that uses anchors repeats a few dozen. */
export const MAX_ALIAS_VALUES = 10_000;

export interface AliasProblem {
  /** The alias's offset in the file's text. */
  offset: number;
  problem: string;
}

/** The identity checks of the `yaml` package, handed over by the caller that loaded it. */
export interface YamlIdentity {
  isAlias(node: unknown): boolean;
  isCollection(node: unknown): boolean;
  isPair(node: unknown): boolean;
}

/**
 * The first problem of the document's aliases, in document order, or undefined. An alias counts
 * the values of the node it names (that node's own aliases included), as `toJS` would copy them.
 */
export function aliasProblem(yaml: YamlIdentity, doc: Document): AliasProblem | undefined {
  // Each anchor's latest node before the point reached: its size once complete, 'open' while it is being walked.
  const anchors = new Map<string, number | 'open'>();
  let repeated = 0;
  let found: AliasProblem | undefined;
  const size = (node: unknown): number => {
    if (found !== undefined || node === null || typeof node !== 'object') return 0;
    if (yaml.isPair(node)) {
      const pair = node as { key: unknown; value: unknown };
      return size(pair.key) + size(pair.value);
    }
    const at = (node as YamlNode).range?.[0] ?? 0;
    if (yaml.isAlias(node)) {
      const named = anchors.get((node as { source: string }).source);
      if (named === undefined) found = { offset: at, problem: 'An alias names no anchor set before it' };
      else if (named === 'open') found = { offset: at, problem: 'An alias inside the value its own anchor names (a value that contains itself)' };
      else if ((repeated += named) > MAX_ALIAS_VALUES) {
        found = { offset: at, problem: `Aliases repeat more than ${MAX_ALIAS_VALUES.toLocaleString('en')} values in all (an alias bomb)` };
      }
      return typeof named === 'number' ? named : 0;
    }
    const anchor = (node as { anchor?: string }).anchor;
    if (anchor !== undefined) anchors.set(anchor, 'open');
    let total = 1;
    if (yaml.isCollection(node)) for (const item of (node as { items: unknown[] }).items) total += size(item);
    if (anchor !== undefined) anchors.set(anchor, total);
    return total;
  };
  size(doc.contents);
  return found;
}
