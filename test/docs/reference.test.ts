import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import ts from 'typescript';

/*
 * docs/reference.md names every export of the package and of each subpath, and nothing else,
 * and each options table lists exactly the properties of its type: the reference is checked
 * against the types, as the compiler reads them from the entry points of src/.
 */

const repo = join(__dirname, '..', '..');
const ENTRIES: Record<string, string> = {
  'graphql-atomic-rate-limit': 'src/index.ts',
  'graphql-atomic-rate-limit/cost': 'src/cost/index.ts',
  'graphql-atomic-rate-limit/nestjs': 'src/nestjs/index.ts',
  'graphql-atomic-rate-limit/mercurius': 'src/mercurius/index.ts',
  'graphql-atomic-rate-limit/opentelemetry': 'src/opentelemetry/index.ts',
  'graphql-atomic-rate-limit/upstash': 'src/upstash/index.ts',
};
/** Options whose table is the README's (the front door's), not the reference's. */
const README_TABLES: Record<string, string> = { RateLimitDirectiveOptions: '## Options' };

const files = Object.values(ENTRIES).map((f) => join(repo, f));
const program = ts.createProgram(files, {
  module: ts.ModuleKind.Node16,
  moduleResolution: ts.ModuleResolutionKind.Node16,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
  experimentalDecorators: true,
});
const checker = program.getTypeChecker();

/** Each entry's exports: name, and the property names when it is an interface. */
function exportsOf(file: string): Map<string, string[] | undefined> {
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${file} is no module`);
  return new Map(
    checker.getExportsOfModule(module).map((symbol) => {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const properties =
        target.flags & ts.SymbolFlags.Interface
          ? checker
              .getPropertiesOfType(checker.getDeclaredTypeOfSymbol(target))
              .map((p) => p.name)
              .sort()
          : undefined;
      return [symbol.name, properties];
    }),
  );
}

/** The first column of the table that follows `heading` (up to the next heading), sorted. */
function tableAfter(lines: readonly string[], heading: number): string[] | undefined {
  const rows: string[] = [];
  for (let i = heading + 1; i < lines.length && !/^#{1,6} /.test(lines[i] ?? ''); i++) {
    const cell = /^\| `([^`]+)` /.exec(lines[i] ?? '')?.[1];
    if (cell !== undefined) rows.push(cell);
  }
  return rows.length ? rows.sort() : undefined;
}

const reference = readFileSync(join(repo, 'docs', 'reference.md'), 'utf8').split('\n');
const readme = readFileSync(join(repo, 'README.md'), 'utf8').split('\n');

/** The reference's headings by entry: `## \`<entry>\`` then `### \`<name>\``, with tables. */
function documented(): Map<string, Map<string, string[] | undefined>> {
  const byEntry = new Map<string, Map<string, string[] | undefined>>();
  let names: Map<string, string[] | undefined> | undefined;
  reference.forEach((line, i) => {
    const entry = /^## `([^`]+)`$/.exec(line)?.[1];
    if (entry !== undefined) byEntry.set(entry, (names = new Map()));
    const name = /^### `([^`]+)`$/.exec(line)?.[1];
    if (name !== undefined) names?.set(name, tableAfter(reference, i));
  });
  return byEntry;
}

test('the reference has one section per entry point, in the order of package.json', () => {
  expect([...documented().keys()]).toEqual(Object.keys(ENTRIES));
});

test.each(Object.entries(ENTRIES))(
  'every export of %s has its heading, and only they',
  (entry, file) => {
    const exported = [...exportsOf(join(repo, file)).keys()].sort();
    const headings = [...(documented().get(entry)?.keys() ?? [])].sort();
    expect({ missing: exported.filter((n) => !headings.includes(n)) }).toEqual({ missing: [] });
    expect({ unknown: headings.filter((n) => !exported.includes(n)) }).toEqual({ unknown: [] });
  },
);

test.each(Object.entries(ENTRIES))(
  'the tables of %s list exactly the properties of their types',
  (entry, file) => {
    const tables = documented().get(entry) ?? new Map();
    const wrong = [...exportsOf(join(repo, file))].flatMap(([name, properties]) => {
      if (properties === undefined) return [];
      const home = README_TABLES[name];
      const listed = home
        ? tableAfter(readme, readme.indexOf(home))
        : (tables.get(name) as string[] | undefined);
      // every options type and the event have a table; another interface may have one
      if (listed === undefined && !/Options$|^DecisionEvent$/.test(name)) return [];
      return JSON.stringify(listed) === JSON.stringify(properties)
        ? []
        : [`${name}: listed ${JSON.stringify(listed)}, typed ${JSON.stringify(properties)}`];
    });
    expect(wrong).toEqual([]);
  },
);
