/**
 * The response check: an answer against its operation's documented response in openapi.yaml, with
 * the validators the build compiled (router.ts). An answer that fails is the simulator's own bug:
 * the request path logs it and answers a 500 instead.
 */
import { OPERATIONS, compiledValidator, type CompiledValidator, type Operation } from './router.js';

/** By documented status: the body's validator (undefined for a response without a JSON body). */
type ResponseValidators = Map<number, CompiledValidator | undefined>;

const VALIDATORS = new Map<Operation, ResponseValidators>(OPERATIONS.map((operation) => [operation, validatorsOf(operation)]));

function validatorsOf({ operationId, statuses }: Operation): ResponseValidators {
  return new Map(statuses.map((status) => [status, compiledValidator(`${operationId}_${status}`)]));
}

/**
 * Checks an answer against the operation's documented response for its status: the status is
 * documented, the headers that response always carries are there, and a JSON body matches its
 * schema. Returns what is wrong, or undefined.
 */
export function checkResponse(
  operation: Operation,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): string | undefined {
  // Every operation is one of `OPERATIONS`.
  const responses = VALIDATORS.get(operation) as ResponseValidators;
  if (!responses.has(status)) {
    return `status ${status} is not documented for ${operation.method} ${operation.path}`;
  }
  const required = operation.responseHeaders[status];
  if (required !== undefined && required.some((h) => headers[h] === undefined)) {
    const missing = required.filter((h) => headers[h] === undefined);
    return `the ${status} response lacks the header${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
  }
  const validate = responses.get(status);
  if (validate && !validate(body)) {
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; ');
  }
  return undefined;
}
