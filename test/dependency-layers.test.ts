/**
 * The rules of `.dependency-cruiser.cjs` (`npm run lint:deps`) are the "Layers" table of
 * docs/architecture.md: its LAYERS list has the table's rows in the table's order, each with the
 * row's folders as the `folder` column writes them, and the layers the `may import` column names
 * ("everything above" being every row above). A row changed in one place and not the other fails
 * here. What the code imports is dependency-cruiser's to check, not this test's.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

interface Layer {
  layer: string;
  folders: string[];
  mayImport: string[] | 'everything above';
  typesOnly?: string[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { LAYERS } = createRequire(import.meta.url)(`${ROOT}.dependency-cruiser.cjs`) as { LAYERS: Layer[] };

interface Row {
  layer: string;
  folder: string;
  mayImport: string;
}

/** The rows of the "Layers" table: the first table after the `## Layers` heading. */
function layersTable(): Row[] {
  const doc = readFileSync(`${ROOT}docs/architecture.md`, 'utf8');
  const section = doc.slice(doc.indexOf('\n## Layers\n'));
  const lines = section.split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const table = lines.slice(start, lines.findIndex((line, i) => i > start && !line.startsWith('|')));
  const cells = (line: string): string[] => line.slice(1, -1).split(' | ').map((cell) => cell.trim());
  const header = cells(table[0]!);
  expect(header.slice(0, 3)).toEqual(['layer', 'folder', 'may import']);
  return table.slice(2).map((line) => {
    const [layer, folder, mayImport] = cells(line) as [string, string, string];
    return { layer, folder, mayImport };
  });
}

/** The paths a `folder` cell names in backticks, less what the build generates (a parenthesis). */
const foldersOf = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).filter((path) => !path.startsWith('src/generated/'));

/**
 * How the `may import` column names each layer. A name counts whole (`the core's`, `scenarios'`
 * count; `scenario` and `msw`, the package, do not).
 */
const NAMED: Record<string, RegExp> = {
  helpers: /\bhelpers\b/,
  'API types': /\bAPI types\b/,
  'control client': /\bcontrol client\b/,
  core: /\bcore\b/,
  runtime: /\bruntime\b/,
  media: /\bmedia\b/,
  scenarios: /\bscenarios\b/,
  'request path': /\brequest path\b/,
  transcript: /\btranscript\b/,
  persistence: /\bpersistence\b/,
  'HTTP adapter': /\bHTTP adapter\b/,
  'MSW adapter': /\bMSW adapter\b/,
  'drift check': /\bdrift check\b/,
  deploy: /\bdeploy\b/,
  'entry points': /\bentry points\b/,
};

describe('.dependency-cruiser.cjs and the "Layers" table of docs/architecture.md', () => {
  const rows = layersTable();

  it('has the same layers, in the same order', () => {
    expect(LAYERS.map((l) => l.layer)).toEqual(rows.map((r) => r.layer));
    expect(Object.keys(NAMED).sort()).toEqual(rows.map((r) => r.layer).sort());
  });

  it("gives each layer the table's folders", () => {
    for (const [i, row] of rows.entries()) expect(LAYERS[i]?.folders, row.layer).toEqual(foldersOf(row.folder));
  });

  it('lets each layer import the layers its row names, and only those', () => {
    for (const [i, row] of rows.entries()) {
      const named = row.mayImport.includes('everything above')
        ? 'everything above'
        : Object.keys(NAMED).filter((name) => name !== row.layer && NAMED[name]!.test(row.mayImport));
      const config = LAYERS[i]!.mayImport;
      expect(config === 'everything above' ? config : [...config].sort(), row.layer).toEqual(named === 'everything above' ? named : named.sort());
    }
  });

  it('imports from layers above only, but for the types of layers below the request path names', () => {
    const names = LAYERS.map((l) => l.layer);
    for (const [i, l] of LAYERS.entries()) {
      if (l.mayImport !== 'everything above') for (const name of l.mayImport) expect(names.indexOf(name), `${l.layer} → ${name}`).toBeLessThan(i);
      for (const name of l.typesOnly ?? []) expect(names.indexOf(name), `${l.layer} → types of ${name}`).toBeGreaterThan(i);
    }
    expect(LAYERS.filter((l) => l.typesOnly).map((l) => l.layer)).toEqual(['request path']);
    expect(rows.find((r) => r.layer === 'request path')?.mayImport).toMatch(/of the adapters below, only the types/);
  });
});
