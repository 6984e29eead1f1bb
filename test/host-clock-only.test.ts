/**
 * The host's timers are called in src/hostClock.ts only: every other module of src/ takes a host
 * clock from its owner. `npm run lint:code` holds it too (oxlint's no-restricted-globals and
 * no-restricted-properties, `.oxlintrc.json`); this is the same rule, read from the sources, so
 * that `npm test` fails on a timer called anywhere else: as a global (`setTimeout(...)`, a
 * reference such as `typeof clearTimeout`), through the global object (`globalThis.setTimeout`,
 * `window.`, `self.`, `global.`), or imported from `timers`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
/** The one module that calls them. */
const HOST_CLOCK = 'src/hostClock.ts';

const TIMERS = 'setTimeout|setInterval|setImmediate|clearTimeout|clearInterval|clearImmediate';
const FORBIDDEN: readonly RegExp[] = [
  // The global itself: not a property of another object (`clock.setTimeout`), nor a key (`{ setTimeout: ... }`).
  new RegExp(String.raw`(?<![\w$.])(?:${TIMERS})\b(?!\s*:)`, 'g'),
  // Through the global object.
  new RegExp(String.raw`\b(?:globalThis|global|window|self)\s*(?:\?\.|\.)\s*(?:${TIMERS})\b`, 'g'),
  // The timers module.
  /\bfrom\s+['"](?:node:)?timers(?:\/promises)?['"]|\b(?:require|import)\s*\(\s*['"](?:node:)?timers(?:\/promises)?['"]\s*\)/g,
];

/**
 * `text` with its comments and the contents of its strings blanked (newlines kept, so that lines
 * still count): a timer named in a comment or a message is no call. A small scanner of strings,
 * template literals (their `${...}` stay code), comments and regular expression literals.
 */
/** The characters that may begin a string, a comment, a regular expression, or a template's `${...}` end. */
const SPECIAL = /[/'"`{}]/g;

function codeOnly(text: string): string {
  let out = '';
  let i = 0;
  /** The last character of code that is not a space: whether a `/` begins a regular expression. */
  let last = '';
  /** The brace depth at which each template literal now open went into a `${`. */
  const templates: number[] = [];
  let depth = 0;
  const blank = (from: number, to: number): void => void (out += text.slice(from, to).replace(/[^\n]/g, ' '));
  /** Reads a template literal's text from `from` to its end or its next `${`. */
  const templateText = (from: number): void => {
    let j = from;
    while (j < text.length && text[j] !== '`' && !(text[j] === '$' && text[j + 1] === '{')) j += text[j] === '\\' ? 2 : 1;
    blank(from, j);
    if (text[j] === '$') {
      out += '${';
      templates.push(depth++);
      i = j + 2;
    } else {
      out += '`';
      i = j + 1;
    }
    last = '`';
  };
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '/' && (next === '/' || next === '*')) {
      const end = next === '/' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2) + 2;
      const to = end < 2 || (next === '/' && end < 0) ? text.length : end;
      blank(i, to);
      i = to;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      out += c;
      blank(i + 1, j);
      out += text[j] ?? '';
      i = j + 1;
      last = c;
    } else if (c === '`') {
      out += '`';
      templateText(i + 1);
    } else if (c === '}' && templates.at(-1) === depth - 1) {
      // The end of a template's `${...}`: its text goes on.
      depth--;
      templates.pop();
      out += '}';
      templateText(i + 1);
    } else if (c === '/' && (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last) || /\b(?:return|typeof|case|in|of)\s*$/.test(text.slice(Math.max(0, i - 12), i)))) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n' && (inClass || text[j] !== '/')) {
        if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j += text[j] === '\\' ? 2 : 1;
      }
      out += '/';
      blank(i + 1, j);
      out += '/';
      i = j + 1;
      last = '/';
    } else if (c === '{' || c === '}') {
      depth += c === '{' ? 1 : -1;
      out += c;
      last = c;
      i++;
    } else {
      // A run of plain code, to the next character that may begin something else.
      SPECIAL.lastIndex = i + 1;
      const end = SPECIAL.exec(text)?.index ?? text.length;
      const run = text.slice(i, end);
      out += run;
      const tail = run.trimEnd();
      if (tail !== '') last = tail.at(-1) as string;
      i = end;
    }
  }
  // The scanner kept its footing: a string, a template or a regular expression misread would leave the braces unbalanced.
  if (depth !== 0 || templates.length > 0) throw new Error(`the scanner lost its footing (brace depth ${depth} at the end)`);
  return out;
}

/** Each use of a timer in `text`, as `line: the line`. */
function timerUses(text: string): string[] {
  const code = codeOnly(text);
  const lines = text.split('\n');
  const found: string[] = [];
  const at = (index: number): void => {
    const line = code.slice(0, index).split('\n').length;
    found.push(`${line}: ${(lines[line - 1] ?? '').trim()}`);
  };
  for (const pattern of FORBIDDEN) for (const match of code.matchAll(pattern)) at(match.index);
  // Through the global object by a quoted name (`globalThis['setTimeout']`): the name is read from the text, the strings being blanked in `code`.
  for (const match of code.matchAll(/\b(?:globalThis|global|window|self)\s*(?:\?\.)?\[\s*['"`]/g)) {
    const quote = match.index + match[0].length - 1;
    const name = text.slice(quote + 1, text.indexOf(text[quote] as string, quote + 1));
    if (new RegExp(`^(?:${TIMERS})$`).test(name)) at(match.index);
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(?:[cm]?ts|[cm]?js)$/.test(entry.name) ? [path] : [];
  });
}

describe('the host timers, in src/hostClock.ts only', () => {
  it('tells a timer called outside a host clock from one called on it', () => {
    expect(timerUses('const t = setTimeout(() => {}, 10);')).toHaveLength(1);
    expect(timerUses('await new Promise((r) => setImmediate(r));')).toHaveLength(1);
    expect(timerUses('clearInterval(this.timer);')).toHaveLength(1);
    expect(timerUses('const h: ReturnType<typeof setTimeout> = x;')).toHaveLength(1);
    expect(timerUses('globalThis.setTimeout(fn, 1); window?.clearTimeout(h); self["setInterval"](f, 1);')).toHaveLength(3);
    expect(timerUses("import { setTimeout as wait } from 'node:timers/promises';")).not.toEqual([]);
    expect(timerUses("const { setTimeout } = await import('timers');")).not.toEqual([]);
    expect(timerUses('this.hostClock.setTimeout(fn, 10); every(clock, 10, fn); nextTurn(clock, fn);')).toEqual([]);
    expect(timerUses('const clock = { setTimeout: (fn, ms) => x };')).toEqual([]);
    expect(timerUses('// setTimeout(fn, 1)\n/* a `setInterval(2000)` poller */ const url = "http://x"; // clearTimeout(t)')).toEqual([]);
    expect(timerUses("throw new Error('needs setTimeout(fn, ms)'); const re = /['\"]setTimeout(/;")).toEqual([]);
    expect(timerUses('const m = `wait ${ms} ms: setTimeout(x)`;')).toEqual([]);
    expect(timerUses('const m = `wait ${setTimeout(f, ms)} ms`; setImmediate(f);')).toHaveLength(2);
    expect(() => timerUses('const re = /{/; const s = "{"; function f() {')).toThrow('lost its footing');
  });

  it('no module of src/ but src/hostClock.ts calls setTimeout, setInterval, setImmediate or their clear*', () => {
    const files = sourceFiles(SRC).filter((file) => relative(ROOT, file) !== HOST_CLOCK);
    expect(files.length).toBeGreaterThan(50);
    const uses = files.flatMap((file) => {
      try {
        return timerUses(readFileSync(file, 'utf8')).map((use) => `${relative(ROOT, file)}:${use}`);
      } catch (e) {
        throw new Error(`${relative(ROOT, file)}: ${(e as Error).message}`, { cause: e });
      }
    });
    expect(uses, 'take a HostClock from the module\'s owner (src/hostClock.ts says how)').toEqual([]);
  });
});
