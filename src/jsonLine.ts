/** Reading the lines of a JSON Lines file (a transcript, a state file): objects, and their fields' forms. */

/** A line of such a file that cannot be used as it is: the line (1-based) and what is wrong with it. */
export class JsonLinesError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

/**
 * The line's object; anything else is thrown as `problem(line, what)`: text that is not JSON, or
 * JSON that is not an object.
 */
export function parseJsonObject(text: string, line: number, problem: (line: number, what: string) => Error): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw problem(line, `not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw problem(line, 'expected a JSON object');
  return value as Record<string, unknown>;
}

export function isIsoTime(value: unknown): value is string {
  return typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value));
}

export function isStringMap(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string')
  );
}
