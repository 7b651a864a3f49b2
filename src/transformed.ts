import { isObjectType, type GraphQLSchema } from 'graphql';

import { RateLimitConfigError } from './errors';
import { directivesOn, type DirectableNode } from './field-rules';

/**
 * The extension by which a field the transformer wrapped is marked: `{ [directive name]: mark }`,
 * the mark being one per `rateLimitDirective()`, so that a forgotten transform can be told, and a
 * second pass of one transformer wraps nothing twice.
 */
export const LIMITED = 'graphqlAtomicRateLimit';

/** The mark of the directive named `name` that wrapped `field`, if one did. */
export function limitedBy(
  field: { readonly extensions?: Readonly<Record<string, unknown>> | null | undefined },
  name: string,
): unknown {
  const marks = field.extensions?.[LIMITED];
  return typeof marks === 'object' && marks !== null
    ? (marks as Record<string, unknown>)[name]
    : undefined;
}

/**
 * Throws when a field carries the directive (or its type does) but was not wrapped: the
 * schema was served without `transformer`, and its limits would do nothing.
 */
export function assertTransformed(schema: GraphQLSchema, name: string): void {
  const forgotten: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    const typeLimited = uses(schema, type, name);
    for (const field of Object.values(type.getFields())) {
      if ((typeLimited || uses(schema, field, name)) && limitedBy(field, name) === undefined) {
        forgotten.push(`${type.name}.${field.name}`);
      }
    }
  }
  if (forgotten.length > 0) {
    throw new RateLimitConfigError(
      `@${name} is used on ${forgotten.slice(0, 5).join(', ')}${forgotten.length > 5 ? ', ...' : ''} ` +
        'but the schema was not passed through the transformer of rateLimitDirective(); ' +
        'these limits would do nothing. Serve transformer(schema).',
    );
  }
}

function uses(schema: GraphQLSchema, node: DirectableNode, name: string): boolean {
  try {
    return directivesOn(schema, node, name, '').length > 0;
  } catch {
    return true;
  }
}
