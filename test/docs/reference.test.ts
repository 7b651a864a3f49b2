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

function exportSymbols(file: string): ts.Symbol[] {
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${file} is no module`);
  return checker.getExportsOfModule(module);
}

const aliased = (symbol: ts.Symbol): ts.Symbol =>
  symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;

const isInterface = (symbol: ts.Symbol): boolean =>
  !!(aliased(symbol).flags & ts.SymbolFlags.Interface);

/** The declared type of an export (its value's type for a value, else the type it names). */
function typeOf(symbol: ts.Symbol): ts.Type {
  const target = aliased(symbol);
  return target.flags & ts.SymbolFlags.Value && !isInterface(symbol)
    ? checker.getTypeOfSymbol(target)
    : checker.getDeclaredTypeOfSymbol(target);
}

/** Each entry's exports: name, and the property names when it is an interface. */
function exportsOf(file: string): Map<string, string[] | undefined> {
  return new Map(
    exportSymbols(file).map((symbol) => [
      symbol.name,
      isInterface(symbol)
        ? checker
            .getPropertiesOfType(typeOf(symbol))
            .map((p) => p.name)
            .sort()
        : undefined,
    ]),
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

/** The text of each heading's section: `entry` → `name` → its lines up to the next heading. */
function sections(): Map<string, Map<string, string>> {
  const byEntry = new Map<string, Map<string, string>>();
  let names: Map<string, string> | undefined;
  let current: string[] | undefined;
  let name: string | undefined;
  const close = () => {
    if (name !== undefined && current) names?.set(name, current.join('\n'));
  };
  for (const line of reference) {
    const entry = /^## `([^`]+)`$/.exec(line)?.[1];
    const heading = /^### `([^`]+)`$/.exec(line)?.[1];
    if (entry !== undefined || heading !== undefined || /^#{1,3} /.test(line)) {
      close();
      name = heading;
      current = [];
      if (entry !== undefined) byEntry.set(entry, (names = new Map()));
      continue;
    }
    current?.push(line);
  }
  close();
  return byEntry;
}

/** Every backticked span of `text`. */
const spans = (text: string): string[] =>
  [...text.matchAll(/`([^`]+)`/g)].map(([, s]) => s as string);

/** One test per entry: the problems `check` finds in each export and its section, none wanted. */
function checkEachExport(
  title: string,
  check: (symbol: ts.Symbol, section: string, file: string) => string[],
): void {
  test.each(Object.entries(ENTRIES))(title, (entry, file) => {
    const text = sections().get(entry);
    const wrong = exportSymbols(join(repo, file)).flatMap((symbol) =>
      check(symbol, text?.get(symbol.name) ?? '', file),
    );
    expect(wrong).toEqual([]);
  });
}

checkEachExport(
  'each interface of %s written as `{ a, b? }` lists exactly its members, optional ones with ?',
  (symbol, section) => {
    const shape = spans(section).find((s) => /^\{ .* \}$/.test(s));
    if (!isInterface(symbol) || shape === undefined) return [];
    const listed = shape.slice(2, -2).split(', ').sort();
    const typed = checker
      .getPropertiesOfType(typeOf(symbol))
      .map((p) => p.name + (p.flags & ts.SymbolFlags.Optional ? '?' : ''))
      .sort();
    return JSON.stringify(listed) === JSON.stringify(typed)
      ? []
      : [`${symbol.name}: listed ${shape}, typed { ${typed.join(', ')} }`];
  },
);

checkEachExport(
  'each interface of %s has every member named in its section, and each function member its return type',
  (symbol, section) => {
    // an options type's table is checked above; a type spelled out to mirror another package's
    // (a server's plugin) is that package's to document; one re-exported, its home entry's
    if (!isInterface(symbol) || /Options$/.test(symbol.name)) return [];
    if (/spelled out so that|re-exported/.test(section)) return [];
    const named = spans(section).join(' ');
    // inherited members are their own interface's to document
    const own = aliased(symbol).members;
    return checker.getPropertiesOfType(typeOf(symbol)).flatMap((property) => {
      if (!own?.has(property.escapedName)) return [];
      if (!new RegExp(`(^|[^\\w.])${property.name}\\b`).test(named)) {
        return [`${symbol.name}.${property.name} is not named`];
      }
      const call = checker.getTypeOfSymbol(property).getNonNullableType().getCallSignatures()[0];
      if (call === undefined) return [];
      const returns = checker.typeToString(call.getReturnType());
      const said = new RegExp(`\`${property.name}\\([^\`]*\\)\`: \`([^\`]+)\``).exec(section)?.[1];
      return said === returns
        ? []
        : [`${symbol.name}.${property.name}() returns ${returns}, said ${said}`];
    });
  },
);

/** A word or span as a value is written: `'A'` or `A`, `1_000` or `1,000`, before a comma or colon. */
const plain = (word: string): string =>
  word
    .replace(/[,:.]$/, '')
    .replace(/^'(.*)'$/, '$1')
    .replace(/(\d)[,_](?=\d{3})/g, '$1');

/** Every string, number and key inside `value`. */
function leaves(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, inner]) => [key, ...leaves(inner)]);
  }
  return [String(value)];
}

checkEachExport(
  'each constant of %s is written with every key and value it has, an array in its order',
  (symbol, section, file) => {
    // the compiled exports themselves, as a user's code reads them
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const value = (require(join(repo, file)) as Record<string, unknown>)[symbol.name];
    if (value === undefined || typeof value === 'function') return [];
    // numbers may stand unquoted in prose: "128: the deepest selections priced"
    const said = new Set([...spans(section), ...section.split(/[\s;()[\]`]+/)].map(plain));
    const missing = leaves(value).filter((leaf) => !said.has(leaf));
    const list = spans(section).find((s) => s.startsWith('['));
    const order =
      Array.isArray(value) &&
      list !== undefined &&
      list !== `[${value.map((v) => `'${String(v)}'`).join(', ')}]`
        ? [`${symbol.name}: written ${list}`]
        : [];
    return [...missing.map((leaf) => `${symbol.name}: ${leaf} is not written`), ...order];
  },
);

checkEachExport(
  'each union of literals of %s is written with every member, unless it is "one of" a constant',
  (symbol, section) => {
    const type = typeOf(symbol);
    if (!type.isUnion() || /^One of (the values of )?`[A-Z_]+`/m.test(section)) return [];
    const literals = type.types.filter((t) => t.isStringLiteral()).map((t) => t.value);
    const said = new Set(
      spans(section)
        .flatMap((s) => s.split(/ \| /))
        .map(plain),
    );
    return literals.filter((l) => !said.has(l)).map((l) => `${symbol.name}: ${l} is not written`);
  },
);

test('each create*Store answers a store whose ready and close are always there (strict: no TS2722)', () => {
  const factories = Object.values(ENTRIES).flatMap((file) =>
    exportSymbols(join(repo, file)).filter((s) => /^create\w*Store$/.test(s.name)),
  );
  expect(factories.map((s) => s.name).sort()).toEqual([
    'createMemoryStore',
    'createRedisStore',
    'createUpstashStore',
  ]);
  const optional = factories.flatMap((symbol) => {
    const [call] = typeOf(symbol).getCallSignatures();
    const store = call?.getReturnType();
    return ['ready', 'close'].flatMap((method) => {
      const property = store?.getProperty(method);
      return property && !(property.flags & ts.SymbolFlags.Optional)
        ? []
        : [`${symbol.name}(): ${method} is optional`];
    });
  });
  expect(optional).toEqual([]);
});
