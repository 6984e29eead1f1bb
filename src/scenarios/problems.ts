/**
 * What is wrong with a scenario file, in words: each problem reads `field: what was expected`
 * (the field as a path such as `stages.queue.duration.type`), from the schema validator's errors
 * or from a YAML syntax error, which says where it is (line and column) without quoting the file.
 */
import type { ErrorObject } from 'ajv';
import type { YAMLError } from 'yaml';
import { closestMatch } from '../closestMatch.js';

/** Problems as a list, one `  - ` item each; the lines of a multi-line problem are indented under it. */
export function formatProblems(problems: readonly string[], indent = '  '): string {
  return problems.map((p) => `${indent}- ${p.split('\n').join(`\n${indent}  `)}`).join('\n');
}

/**
 * A YAML syntax error: what is wrong and where (line and column), never the file's text. The
 * parser's own message is used where it is fixed text; where it would quote the file (a tag, an
 * escape sequence, a stray token), a description of its kind is used instead.
 */
export function describeYamlError(error: YAMLError): string {
  const described = OWN_DESCRIPTIONS[error.code];
  const message = described ?? error.message.split('\n')[0]!.replace(/:$/, '').replace(/ at line \d+, column \d+$/, '');
  return yamlProblem(message, error.linePos?.[0]);
}

/** A YAML problem at a place in the file: `YAML: <message> at line L, column C`. */
export function yamlProblem(message: string, at: { line: number; col: number } | undefined): string {
  return at ? `YAML: ${message} at line ${at.line}, column ${at.col}` : `YAML: ${message}`;
}

/**
 * The parser's errors described in the simulator's own words: those whose messages quote the file,
 * and one whose message names the parser's failure rather than the file's.
 */
const OWN_DESCRIPTIONS: Partial<Record<YAMLError['code'], string>> = {
  BAD_COLLECTION_TYPE: 'A tag does not fit the collection it is on',
  BAD_DIRECTIVE: 'An unknown or invalid directive (a line starting with %)',
  BAD_DQ_ESCAPE: 'An invalid escape sequence in a double-quoted string',
  BAD_PROP_ORDER: 'An anchor or tag must come after the indicator it goes with',
  BAD_SCALAR_START: 'A plain value cannot start with this character; quote the value',
  RESOURCE_EXHAUSTION: 'Collections nested too deeply',
  TAG_RESOLVE_FAILED: 'An unknown tag (scenario files need none)',
  UNEXPECTED_TOKEN: 'Unexpected characters here',
};

/** The schema validator's errors (Ajv, `allErrors` and `verbose`) as problems, without repeats. */
export function describeSchemaErrors(errors: readonly ErrorObject[]): string[] {
  // Keyed by the message, or for an unknown key by the key, which two rules may both report.
  const out = new Map<string, string>();
  const add = (message: string, key = message, override = false) => {
    if (override || !out.has(key)) out.set(key, message);
  };
  for (const e of withoutMismatchedBranches(errors)) {
    const field = fieldPath(e.instancePath);
    const where = field || '(top level)';
    const child = (key: string) => `${field ? `${field}.` : ''}${shown(key)}`;
    switch (e.keyword) {
      case 'additionalProperties': {
        // The keys allowed right here: the most precise list, over the one from propertyNames.
        const key = (e.params as { additionalProperty: string }).additionalProperty;
        const allowed = Object.keys((e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {});
        add(unknownKey(child(key), key, allowed), `unknown ${child(key)}`, true);
        break;
      }
      case 'propertyNames': {
        // A key that no variant of this object has (a distribution's keys, whatever its type).
        const key = (e.params as { propertyName: string }).propertyName;
        const allowed = (e.schema as { enum?: string[] } | undefined)?.enum ?? [];
        add(unknownKey(child(key), key, allowed), `unknown ${child(key)}`);
        break;
      }
      case 'enum':
        // The enum inside propertyNames is reported by propertyNames, naming the key.
        if ((e as ErrorObject & { propertyName?: string }).propertyName !== undefined) break;
        add(`${where}: expected one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}, got ${describe(e.data)}`);
        break;
      case 'type':
        add(`${where}: expected ${(e.params as { type: string }).type}, got ${describe(e.data)}`);
        break;
      case 'required': {
        const missing = (e.params as { missingProperty: string }).missingProperty;
        // A missing discriminator (a distribution's `type`) is reported with its allowed values below.
        if ((e.parentSchema as { discriminator?: { propertyName: string } } | undefined)?.discriminator?.propertyName === missing) break;
        add(`${child(missing)}: required, but missing`);
        break;
      }
      case 'discriminator': {
        const tag = (e.params as { tag: string }).tag;
        const values = discriminatorValues(e).map((v) => JSON.stringify(v)).join(', ');
        const data = e.data as Record<string, unknown> | null;
        const got = data && typeof data === 'object' && tag in data ? `, got ${describe(data[tag])}` : '';
        const message = got ? `expected one of ${values}${got}` : `required, but missing (expected one of ${values})`;
        add(`${child(tag)}: ${message}`);
        break;
      }
      case 'oneOf':
      case 'if':
        break;
      default:
        add(`${where}: expected a value that ${e.message ?? 'is valid'}, got ${describe(e.data)}`);
    }
  }
  return [...out.values()];
}

function unknownKey(field: string, key: string, allowed: readonly string[]): string {
  if (allowed.length === 0) return `${field}: unknown key`;
  const guess = closestMatch(key, allowed);
  return `${field}: unknown key${guess ? `, did you mean ${guess}?` : ''} (expected one of: ${allowed.join(', ')})`;
}

/**
 * Drops the errors of `oneOf` branches that do not apply: when a value fails every branch of a
 * `oneOf` (such as `latency: null | distribution`), the branches whose only complaint is the
 * value's type (`expected null` for an object) say nothing useful once another branch of the same
 * `oneOf` has looked inside the value.
 */
function withoutMismatchedBranches(errors: readonly ErrorObject[]): ErrorObject[] {
  const branches = new Map<string, Map<string, ErrorObject[]>>();
  for (const e of errors) {
    const m = /^(.*\/oneOf)\/(\d+)(?:\/|$)/.exec(e.schemaPath);
    if (!m) continue;
    const byBranch = branches.get(`${e.instancePath} ${m[1]}`) ?? new Map<string, ErrorObject[]>();
    byBranch.set(m[2]!, [...(byBranch.get(m[2]!) ?? []), e]);
    branches.set(`${e.instancePath} ${m[1]}`, byBranch);
  }
  const dropped = new Set<ErrorObject>();
  for (const byBranch of branches.values()) {
    const typeOnly = [...byBranch.values()].filter((es) => es.every((e) => e.keyword === 'type' && e.schemaPath.endsWith('/type')));
    if (typeOnly.length < byBranch.size) for (const es of typeOnly) for (const e of es) dropped.add(e);
  }
  return errors.filter((e) => !dropped.has(e));
}

/** The values a discriminator accepts: the `const` of its tag in each `oneOf` branch. */
function discriminatorValues(e: ErrorObject): unknown[] {
  const tag = (e.params as { tag: string }).tag;
  const branches = (e.parentSchema as { oneOf?: { properties?: Record<string, { const?: unknown }> }[] } | undefined)?.oneOf ?? [];
  return branches.map((b) => b.properties?.[tag]?.const).filter((v) => v !== undefined);
}

function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((s) => shown(s.replace(/~1/g, '/').replace(/~0/g, '~')))
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : `.${s}`))
    .join('')
    .replace(/^\./, '');
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${shown(JSON.stringify(value))}`;
}

/** How much of a key or value of the file a problem repeats. */
const SHOWN_CHARS = 100;

/** A key or value of the file as a problem repeats it: at most `SHOWN_CHARS` characters. */
function shown(text: string): string {
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}…` : text;
}
