import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import ts from 'typescript';

import { startProcess, type Child } from './processes';

const repo = join(__dirname, '..', '..');

/** Where README recipes run: a project of their own that has the package installed by name. */
export interface RecipeProject {
  /** Starts `examples/<file>` with `env` added (`.mts` runs as an ES module). */
  start(file: string, env: Record<string, string>): Child;
  /** Removes the project. */
  remove(): void;
}

/**
 * A throwaway project whose node_modules links every package of the repository's and this
 * package by its name (its built `dist/`), so a recipe's `import ... from
 * 'graphql-atomic-rate-limit'` resolves as it does for a user. Each recipe is transpiled on its
 * own, as pasted: the lint type-checks it against the sources.
 */
export function recipeProject(): RecipeProject {
  const dir = mkdtempSync(join(tmpdir(), 'garl-recipes-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  // the repository's node_modules links this package by its name too (the server workspace
  // depends on it): the recipes get it there
  for (const entry of readdirSync(join(repo, 'node_modules'))) {
    symlinkSync(join(repo, 'node_modules', entry), join(modules, entry));
  }
  return {
    start(file, env) {
      const esm = file.endsWith('.mts');
      const source = readFileSync(join(repo, 'examples', file), 'utf8');
      const { outputText } = ts.transpileModule(source, {
        fileName: file,
        compilerOptions: {
          module: esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
          target: ts.ScriptTarget.ES2022,
          esModuleInterop: true,
          // NestJS recipes use TypeScript's decorators, and Nest reads their parameter types
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
        },
      });
      const out = join(dir, basename(file).replace(/\.m?ts$/, esm ? '.mjs' : '.js'));
      writeFileSync(out, outputText);
      return startProcess(process.execPath, [out], { cwd: dir, env: { ...process.env, ...env } });
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
