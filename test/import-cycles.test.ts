/**
 * No module of `src/` imports itself back, by any path: the layers of docs/architecture.md form a
 * graph without cycles, so each module can be read, tested and loaded after what it uses.
 *
 * Every kind of reference counts, `import type` too (a type-only cycle is still two modules that
 * cannot be understood one without the other): `import`, `export ... from`, `import x = require()`,
 * `import()` calls and `import('...')` types, and `require()` of a relative path. The installed
 * TypeScript (7, a native compiler) has no parser to call from JavaScript, so a small lexer below
 * reads the sources: it skips comments, strings and regular expressions, so text there that looks
 * like an import is not taken for one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');

/** The `.ts` files under `dir`, generated ones excepted (they import nothing of the project's). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

type Token = { kind: 'word' | 'string' | 'punctuation'; text: string };

/** Characters after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set('(,=:[!&|?{};+-*%<>~^'.split(''));
const WORDS_BEFORE_REGEX = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'yield', 'await']);

/**
 * The words, strings and punctuation of a TypeScript source, comments and the text of regular
 * expressions and template literals left out (a template's `${...}` is read as code). Enough of a
 * lexer to find the module specifiers without mistaking text in a comment or a string for one.
 */
function tokens(text: string): Token[] {
  const out: Token[] = [];
  const templates: number[] = []; // brace depth at which each open `${` returns to its template
  let depth = 0;
  let i = 0;
  const previousAllowsRegex = (): boolean => {
    const last = out.at(-1);
    if (!last) return true;
    if (last.kind === 'word') return WORDS_BEFORE_REGEX.has(last.text);
    return last.kind === 'punctuation' && BEFORE_REGEX.has(last.text);
  };
  /** Reads template text from `i` (just after a backtick or a `}` closing `${`) to its end or next `${`. */
  const templateText = (): void => {
    while (i < text.length) {
      const c = text[i]!;
      if (c === '\\') i += 2;
      else if (c === '`') {
        i += 1;
        out.push({ kind: 'string', text: '' });
        return;
      } else if (c === '$' && text[i + 1] === '{') {
        i += 2;
        templates.push(depth);
        depth += 1;
        out.push({ kind: 'punctuation', text: '(' });
        return;
      } else i += 1;
    }
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (/\s/.test(c)) i += 1;
    else if (c === '/' && next === '/') i = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
    else if (c === '/' && next === '*') i = text.indexOf('*/', i + 2) < 0 ? text.length : text.indexOf('*/', i + 2) + 2;
    else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = '';
      while (j < text.length && text[j] !== c) {
        if (text[j] === '\\') j += 1;
        value += text[j];
        j += 1;
      }
      out.push({ kind: 'string', text: value });
      i = j + 1;
    } else if (c === '`') {
      i += 1;
      templateText();
    } else if (c === '/' && previousAllowsRegex()) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && (inClass || text[j] !== '/')) {
        if (text[j] === '\\') j += 1;
        else if (text[j] === '[') inClass = true;
        else if (text[j] === ']') inClass = false;
        j += 1;
      }
      i = j + 1;
      while (i < text.length && /[a-z]/.test(text[i]!)) i += 1;
      out.push({ kind: 'string', text: '' });
    } else if (/[\w$]/.test(c)) {
      const word = /^[\w$]+/.exec(text.slice(i, i + 200))![0];
      out.push({ kind: 'word', text: word });
      i += word.length;
    } else {
      i += 1;
      if (c === '{') depth += 1;
      else if (c === '}') {
        depth -= 1;
        if (templates.at(-1) === depth) {
          templates.pop();
          out.push({ kind: 'punctuation', text: ')' });
          templateText();
          continue;
        }
      }
      out.push({ kind: 'punctuation', text: c });
    }
  }
  return out;
}

/**
 * Every module specifier `file` names: `import ... from`, `import '...'`, `export ... from`,
 * `import('...')` (a call or a type), and `require('...')` (also as `import x = require('...')`).
 */
function specifiers(source: string): string[] {
  const list = tokens(source);
  const found: string[] = [];
  const at = (k: number): Token | undefined => list[k];
  const is = (k: number, kind: Token['kind'], text?: string): boolean => at(k)?.kind === kind && (text === undefined || at(k)?.text === text);
  /** From token `k`, the string after the first `from` before a `;`, `=` or `(` (the end of a declaration). */
  const fromClause = (k: number): void => {
    for (let j = k; j < list.length; j += 1) {
      if (is(j, 'punctuation', ';') || is(j, 'punctuation', '=') || is(j, 'punctuation', '(')) return;
      if (is(j, 'word', 'from') && is(j + 1, 'string')) {
        found.push(at(j + 1)!.text);
        return;
      }
    }
  };
  list.forEach((token, k) => {
    if (token.kind !== 'word' || is(k - 1, 'punctuation', '.')) return;
    if (token.text === 'import' || token.text === 'require') {
      if (is(k + 1, 'punctuation', '(') && is(k + 2, 'string')) found.push(at(k + 2)!.text);
      else if (token.text === 'import' && is(k + 1, 'string')) found.push(at(k + 1)!.text);
      else if (token.text === 'import' && !is(k + 1, 'punctuation', '.')) fromClause(k + 1);
    } else if (token.text === 'export') {
      const first = is(k + 1, 'word', 'type') ? k + 2 : k + 1;
      if (is(first, 'punctuation', '{') || is(first, 'punctuation', '*')) fromClause(first);
    }
  });
  return found;
}

/** The project file a relative specifier names (`./x.js` is `./x.ts`), or undefined for a package. */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier);
  for (const candidate of [target.replace(/\.js$/, '.ts'), `${target}.ts`, join(target, 'index.ts')]) {
    if (candidate.endsWith('.ts') && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** `src/` as a graph: each module (path from the root) to the modules it references. */
function importGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    const targets = new Set<string>();
    for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
      const target = resolveSpecifier(file, specifier);
      if (target) targets.add(relative(ROOT, target));
    }
    graph.set(relative(ROOT, file), targets);
  }
  return graph;
}

/** The strongly connected components of more than one module, or of one that imports itself (Tarjan). */
function tangles(graph: Map<string, Set<string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || graph.get(node)?.has(node)) found.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return found;
}

/** A shortest cycle through `start` inside `component`, as `a -> b -> ... -> a` (breadth first). */
function cycleThrough(graph: Map<string, Set<string>>, component: string[], start: string): string {
  const inside = new Set(component);
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      if (!inside.has(next)) continue;
      if (next === start) {
        const path = [node];
        while (path[0] !== start) path.unshift(previous.get(path[0]!)!);
        return [...path, start].join(' -> ');
      }
      if (!previous.has(next)) {
        previous.set(next, node);
        queue.push(next);
      }
    }
  }
  throw new Error(`no cycle through ${start}`);
}

/** One line per tangle: its modules, and a cycle through each of them, so every cycle is seen. */
function describeTangles(graph: Map<string, Set<string>>): string[] {
  return tangles(graph).map((component) => {
    const cycles = [...new Set(component.map((module) => cycleThrough(graph, component, module)))];
    return `${component.length} modules: ${component.join(', ')}\n    ${cycles.join('\n    ')}`;
  });
}

describe('the modules of src/', () => {
  const graph = importGraph();

  it('are read: every module is found and the imports of the request path are seen', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(graph.get('src/request-path/handleRequest.ts')).toContain('src/core/errors.ts');
  });

  it('are read by a lexer that finds every form of import and nothing in comments, strings or regular expressions', () => {
    const source = [
      "import type { A } from './a.js';",
      "import {\n  b,\n  c as d,\n} from './b.js';",
      "import './c.js';",
      "export * from './d.js';",
      "export type { E } from './e.js';",
      "export { f };",
      "export function g(from: string) { return from; }",
      "import x = require('./h.js');",
      "const i = await import('./i.js'); let j: import('./j.js').J;",
      "const k = import.meta.url;",
      "// import { no } from './comment.js';",
      "/* export * from './block.js'; */",
      "const s = \"import { no } from './string.js'\";",
      "const t = `${a}import x from './template.js'${`${b}`}`;",
      "const r = /import('.\\/regex.js')[/]/g;",
      "const q = 4 / 2; import { l } from './l.js';",
    ].join('\n');
    expect(specifiers(source)).toEqual(['./a.js', './b.js', './c.js', './d.js', './e.js', './h.js', './i.js', './j.js', './l.js']);
  });

  it('import one another without a cycle', () => {
    expect(describeTangles(graph)).toEqual([]);
  });
});
