import { TypeMetadataStorage } from '@nestjs/graphql';

import { fieldOf } from './gate';

/** A resolver method that carries `@Directive('@<name>(...)')`. */
export interface DirectedMethod {
  /** `Type.field` Nest serves it as. */
  readonly coordinate: string;
  /** `Class.method`, for errors. */
  readonly method: string;
}

interface DirectiveEntry {
  readonly target: unknown;
  readonly fieldName: string;
  readonly sdl: string;
}

/**
 * The methods of `instances` on which `@Directive` writes `@<name>`. Nest keeps these only in its
 * metadata storage (`all.fieldDirectives`, not a published API); where it has none, none are found.
 */
export function directedMethods(instances: readonly object[], name: string): DirectedMethod[] {
  const storage = TypeMetadataStorage as unknown as {
    metadataByTargetCollection?: { all?: { fieldDirectives?: unknown } };
  };
  const all = storage.metadataByTargetCollection?.all?.fieldDirectives;
  if (!Array.isArray(all)) return [];
  const written = new RegExp(`^\\s*@${name}\\b`);
  const found: DirectedMethod[] = [];
  for (const instance of instances) {
    for (let p: unknown = Object.getPrototypeOf(instance); p && p !== Object.prototype;) {
      const owner = (p as { constructor: unknown }).constructor;
      for (const entry of all as DirectiveEntry[]) {
        if (entry.target !== owner || !written.test(entry.sdl)) continue;
        const method: unknown = Object.getOwnPropertyDescriptor(p, entry.fieldName)?.value;
        if (typeof method !== 'function') continue;
        const coordinate = fieldOf(instance, method, entry.fieldName);
        const className = (owner as { name?: string }).name ?? '';
        if (coordinate) found.push({ coordinate, method: `${className}.${entry.fieldName}` });
      }
      p = Object.getPrototypeOf(p);
    }
  }
  return found;
}
