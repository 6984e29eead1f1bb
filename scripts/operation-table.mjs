// Build step: generates src/generated/operations.ts, the table of openapi.yaml's operations by
// operationId: their ids (`OPERATION_IDS`, the keys the handler table of src/request-path/operations.ts must
// have, which the compiler holds it to), and for each, what the contract says of it (method, path,
// surface, whether it names an account) and the facts its `x-sim-operation` declares. Every layer
// may read src/generated/ (docs/architecture.md, "Layers"), so the request path, the journal, the
// client report, the replay and the typed client's fan-out over shards all read each fact from
// this one table. The file is not committed: `npm run build` and `npm run typecheck` write it
// first.
//
// `x-sim-operation` (an object beside the operation's operationId) declares:
//   creates: video | image      a create (a /v1 operation): what it makes
//   polled: true                the retrieve a client polls a generation with (a /v1 operation)
//   cancels: true               the cancel of a generation (a /v1 operation)
//   changes_state: false        a POST that changes nothing (default: every method but GET changes state)
//   stops: true                 the simulator stops once it has answered
//   shows_clock_settings: true  its answer shows the clock's mode and speed
//   shards: KIND                how the typed client sends a control call that names no account
//                               over shards (every /_sim operation has one; SHARD_FAN_OUTS below)
// Anything else, or a fact on the wrong surface, fails the build, naming the operation.
//
// `node scripts/operation-table.mjs [--from OPENAPI.yaml] [--out FILE.ts]`: the defaults are the
// project's openapi.yaml and src/generated/operations.ts.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { openapiDocument } from './openapi-document.mjs';
import { writeGenerated } from './write-generated.mjs';

/** The fan-outs over shards, each with what the typed client does with a call that names no account. */
const SHARD_FAN_OUTS = {
  proxy: "the proxy sends it to shard 0, which answers; over every shard (`health()`), every shard's answer",
  'latest-clock': "sent to every shard, the latest clock answered (an advance by seconds: every clock moved to one instant first)",
  'merged-health': "sent to every shard, shard 0's health answered with every shard's under `shards`",
  summed: 'sent to every shard, the `queued` counts summed',
  'summed-list': 'sent to every shard, the `queued` counts summed and the lists joined',
  verified: "sent to every shard, the counts summed (a sequence: verified when one shard holds it all)",
  waited: 'a wait on every shard, the matches counted together',
  'merged-pages': "sent to every shard, the pages merged in creation order",
  holder: 'sent to every shard, the one that holds the generation answers (none: the 404)',
  'one-shard': 'not sent to every shard (each shard has its own): refused, naming shard(i)',
};

/** The facts `x-sim-operation` may declare: the values each takes, and the surface it belongs to (undefined: either). */
const FACTS = {
  creates: { values: ['video', 'image'], surface: 'service' },
  polled: { values: [true], surface: 'service' },
  cancels: { values: [true], surface: 'service' },
  changes_state: { values: [false] },
  stops: { values: [true] },
  shows_clock_settings: { values: [true] },
  shards: { values: Object.keys(SHARD_FAN_OUTS), surface: 'control' },
};

const METHODS = ['get', 'post', 'delete'];
const SURFACES = { '/v1/': 'service', '/_sim/': 'control' };

/**
 * The operations of an OpenAPI document, in document order, each with its facts; throws an Error
 * naming every operation whose facts are missing or wrong.
 */
export function operationTable(document) {
  const { parameters: parametersOf } = openapiDocument(document);
  const problems = [];
  const operations = [];
  for (const [path, item] of Object.entries(document.paths)) {
    const prefix = Object.keys(SURFACES).find((p) => path.startsWith(p));
    // The key order of the path item: the order the client report lists the service's endpoints in.
    for (const [key, operation] of Object.entries(item)) {
      if (key === 'parameters' || key === 'summary' || key === 'description' || key.startsWith('x-')) continue;
      const id = operation?.operationId;
      const where = `${key.toUpperCase()} ${path}${id ? ` (${id})` : ''}`;
      if (!METHODS.includes(key)) problems.push(`${where}: the simulator answers ${METHODS.join(', ')} only`);
      if (!id) problems.push(`${where}: no operationId`);
      if (prefix === undefined) problems.push(`${where}: the path is under neither /v1/ nor /_sim/`);
      if (!id || !METHODS.includes(key) || prefix === undefined) continue;
      const surface = SURFACES[prefix];
      const declared = operation['x-sim-operation'] ?? {};
      if (typeof declared !== 'object' || Array.isArray(declared)) {
        problems.push(`${where}: x-sim-operation must be an object`);
        continue;
      }
      for (const [fact, value] of Object.entries(declared)) {
        const known = FACTS[fact];
        if (!known) problems.push(`${where}: x-sim-operation has no fact '${fact}' (${Object.keys(FACTS).join(', ')})`);
        else if (!known.values.includes(value)) problems.push(`${where}: x-sim-operation's ${fact} is one of ${known.values.join(', ')}, not ${JSON.stringify(value)}`);
        else if (known.surface !== undefined && known.surface !== surface) problems.push(`${where}: x-sim-operation's ${fact} is for ${known.surface} operations only`);
      }
      if (surface === 'control' && declared.shards === undefined) {
        problems.push(`${where}: a control operation declares its fan-out over shards (x-sim-operation's shards: ${Object.keys(SHARD_FAN_OUTS).join(', ')})`);
      }
      const parameters = parametersOf(item, operation);
      // A /v1 request names its account by its Bearer key; a control request, by its api_key.
      const namesAccount = surface === 'service' || parameters.some((p) => p.in === 'query' && p.name === 'api_key');
      if (namesAccount !== Object.hasOwn(operation.responses ?? {}, '421')) {
        problems.push(`${where}: ${namesAccount ? 'names an account but does not document' : 'documents'} the 421 of a key of another shard${namesAccount ? '' : ' but names no account'}`);
      }
      operations.push({
        id,
        facts: {
          method: key.toUpperCase(),
          path,
          surface,
          namesAccount,
          creates: declared.creates ?? null,
          polled: declared.polled === true,
          cancels: declared.cancels === true,
          changesState: declared.changes_state ?? key !== 'get',
          stops: declared.stops === true,
          showsClockSettings: declared.shows_clock_settings === true,
          shards: declared.shards ?? null,
        },
      });
    }
  }
  const seen = new Set();
  for (const { id } of operations) {
    if (seen.has(id)) problems.push(`operationId ${id} is given twice`);
    seen.add(id);
  }
  if (problems.length > 0) throw new Error(`openapi.yaml's operations:\n  ${problems.join('\n  ')}`);
  return operations;
}

/** The text of src/generated/operations.ts for these operations. */
export function operationModule(operations) {
  const ids = (surface) => operations.filter((o) => surface === undefined || o.facts.surface === surface).map((o) => o.id);
  const list = (values) => `[\n${values.map((v) => `  ${JSON.stringify(v)},`).join('\n')}\n] as const`;
  const kinds = Object.entries(SHARD_FAN_OUTS)
    .map(([kind, does]) => `  /** ${does}. */\n  | ${JSON.stringify(kind)}`)
    .join('\n');
  const table = operations.map(({ id, facts }) => `  ${id}: ${JSON.stringify(facts)},`).join('\n');
  return `/**
 * The operations of openapi.yaml, by operationId, generated at build time
 * (scripts/operation-table.mjs). Not committed; do not edit: change openapi.yaml and rebuild.
 *
 * Each operation's facts are declared once, in its \`x-sim-operation\` (or read from the contract:
 * its method, path, surface and whether it names an account), and read here by the request path,
 * the journal, the client report, the replay and the typed client's fan-out over shards.
 */

/** Every operationId, in the document's order: the keys of the handler table (src/request-path/operations.ts). */
export const OPERATION_IDS = ${list(ids())};
export type OperationId = (typeof OPERATION_IDS)[number];

/** The service's operations (\`/v1\`), in the document's order. */
export const SERVICE_OPERATION_IDS = ${list(ids('service'))};
export type ServiceOperationId = (typeof SERVICE_OPERATION_IDS)[number];

/** The control API's operations (\`/_sim\`), in the document's order. */
export const CONTROL_OPERATION_IDS = ${list(ids('control'))};
export type ControlOperationId = (typeof CONTROL_OPERATION_IDS)[number];

/** How the typed client sends a control call that names no account over shards (src/control-client/shards.ts); one that names one goes to its account's shard. */
export type ShardFanOut =
${kinds};

/** What the simulator reads of an operation beside its contract. */
export interface OperationFacts {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** The path template: \`/v1/videos/{id}\`. */
  readonly path: string;
  /** \`service\` (\`/v1\`) or \`control\` (\`/_sim\`). */
  readonly surface: 'service' | 'control';
  /** Whether a request names an account: every service operation (its Bearer key), a control one that takes \`api_key\` (and documents the 421 of another shard's key). */
  readonly namesAccount: boolean;
  /** What a create makes (the journal keeps its id; its prompt's triggers are read; the client report judges its retries); null for any other operation. */
  readonly creates: 'video' | 'image' | null;
  /** The retrieve a client polls a generation with (the client report's polling rules). */
  readonly polled: boolean;
  /** The cancel of a generation (the client report's cancel rule). */
  readonly cancels: boolean;
  /** Whether a success changes the state (a transcript and a state file record it): every method but GET, unless declared otherwise. */
  readonly changesState: boolean;
  /** The simulator stops once it has answered (a replay does not send it). */
  readonly stops: boolean;
  /** Its answer shows the clock's mode and speed (a replay on the manual clock takes them as recorded). */
  readonly showsClockSettings: boolean;
  /** A control operation's fan-out over shards; null for a service operation. */
  readonly shards: ShardFanOut | null;
}

/** A control operation's facts: its fan-out over shards is always declared. */
export type ControlFacts = OperationFacts & { readonly surface: 'control'; readonly shards: ShardFanOut };

/** Every operation's facts, by operationId. */
export const OPERATION_FACTS: { readonly [K in OperationId]: K extends ControlOperationId ? ControlFacts : OperationFacts } = {
${table}
};

/** The facts of an operationId as a record keeps it (any string: a journal record read from a file), or undefined. */
export function factsOf(operationId: string | null): OperationFacts | undefined {
  return operationId !== null && Object.hasOwn(OPERATION_FACTS, operationId) ? OPERATION_FACTS[operationId as OperationId] : undefined;
}
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = new URL('../', import.meta.url);
  const option = (name, fallback) => {
    const at = process.argv.indexOf(name);
    return at < 0 ? fallback : pathToFileURL(process.argv[at + 1]);
  };
  const source = option('--from', new URL('openapi.yaml', root));
  const target = option('--out', new URL('src/generated/operations.ts', root));
  try {
    writeGenerated(target, operationModule(operationTable(parse(readFileSync(source, 'utf8')))));
  } catch (e) {
    process.stderr.write(`scripts/operation-table.mjs: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
