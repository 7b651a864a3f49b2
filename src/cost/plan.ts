import {
  getNamedType,
  getOperationAST,
  isAbstractType,
  isCompositeType,
  isListType,
  isNonNullType,
  Kind,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationTypeNode,
  type SelectionNode,
  type VariableDefinitionNode,
} from 'graphql';

import { checkDepth, createWork, spendArguments, workBound } from './bounds';
import {
  collectFields,
  conjunctionKey,
  type Collecting,
  type Conjunction,
  type FieldGroup,
  type Member,
} from './collect';
import { CostQueryError } from './errors';
import { argumentsCost, type ArgumentsCost } from './input-cost';
import { sizingOf, type Sizing } from './list-size';
import { fieldListSize, leafWeight, objectWeight, ownFieldWeight } from './weights';

/** One operation of a document, compiled against a schema: what pricing it needs, and no more. */
export interface OperationPlan {
  readonly operation: OperationTypeNode;
  readonly root: TypePlan;
  /** The operation's variables, which the request's are coerced to before pricing. */
  readonly variableDefinitions: readonly VariableDefinitionNode[];
}

/** A selection set as an object of one concrete type sees it. Plans are shared, never copied. */
export interface TypePlan {
  readonly typeName: string;
  /** What each object of this type costs when its field has no `@cost` of its own. */
  readonly weight: number;
  readonly fields: readonly FieldPlan[];
  /** Whether its cost depends on the variables or on the size a parent field hands down. */
  readonly dynamic: boolean;
  /** Levels of fields from this plan down to its deepest leaf, itself included. */
  readonly height: number;
}

/** One field of a response, with everything its cost depends on. */
export interface FieldPlan {
  readonly key: string;
  readonly coordinate: string;
  /** Kept when one of these conjunctions holds; undefined when always kept. */
  readonly when: readonly Conjunction[] | undefined;
  /** Per item: the field's `@cost`, else (leaf) its type's; undefined: the object type's weight. */
  readonly weight: number | undefined;
  /** How many lists wrap the field's type (`[[User]]` is 2); each multiplies by the size. */
  readonly listDepth: number;
  readonly sizing: Sizing | undefined;
  /** Whether the parent's `@listSize(sizedFields:)` names this field. */
  readonly sized: boolean;
  readonly args: ArgumentsCost;
  /** For an object, interface or union: one plan per possible object type; else undefined. */
  readonly branches: readonly TypePlan[] | undefined;
}

// A plan made costs several times what collecting one selection does (maps, keys, sizing).
const PLAN_STEPS = 4;

interface Compilation extends Collecting {
  /** Plans by what they are made of; null while one is being compiled (a cycle if met again). */
  readonly plans: Map<string, TypePlan | null>;
  readonly ids: Map<SelectionNode, number>;
}

/**
 * Compiles the operation `operationName` of `document` (the only one when not named). A
 * document nested deeper than MAX_DEPTH, or whose compilation would take more steps than its
 * size pays for (`workBound`), is refused with a CostQueryError (see `bounds`).
 */
export function compileOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
): OperationPlan {
  const operation = getOperationAST(document, operationName);
  if (!operation) {
    throw new CostQueryError(
      operationName
        ? `Unknown operation named "${operationName}"`
        : 'Must provide operation name if query contains multiple operations',
    );
  }
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  const rootType = schema.getRootType(operation.operation);
  if (!rootType) throw new CostQueryError(`Schema is not configured for ${operation.operation}`);
  const work = createWork(workBound(document));
  const compilation = { schema, fragments, work, plans: new Map(), ids: new Map() };
  const root = typePlan(
    compilation,
    rootType,
    [{ selectionSet: operation.selectionSet, when: [], depth: 0 }],
    undefined,
    0,
  );
  const variableDefinitions = operation.variableDefinitions ?? [];
  return { operation: operation.operation, root, variableDefinitions };
}

function typePlan(
  compilation: Compilation,
  type: GraphQLObjectType,
  members: readonly Member[],
  sizedFields: ReadonlySet<string> | undefined,
  level: number,
): TypePlan {
  const { schema, plans } = compilation;
  // Equal inputs make equal plans: sharing them keeps a document that spreads one fragment
  // in many places (or nests abstract types) from compiling, and costing, exponentially.
  const key = keyOf(compilation, type, members, sizedFields);
  const known = plans.get(key);
  if (known === null) throw new CostQueryError('Fragments spread each other in a cycle');
  if (known) {
    // A plan met again deeper than where it was made must not take pricing, which recurses
    // along plans, deeper than MAX_DEPTH levels of fields.
    checkDepth(level + known.height - 1);
    return known;
  }
  plans.set(key, null);
  compilation.work.spend(PLAN_STEPS);
  const fields: FieldPlan[] = [];
  for (const [responseKey, group] of collectFields(compilation, type, members)) {
    const field = fieldPlan(compilation, type, responseKey, group, sizedFields, level);
    if (field) fields.push(field);
  }
  const dynamic = fields.some(
    (f) =>
      f.when !== undefined ||
      typeof f.args === 'function' ||
      f.sized ||
      f.sizing?.variable === true ||
      f.branches?.some((b) => b.dynamic) === true,
  );
  let below = 0;
  for (const branch of fields.flatMap((f) => f.branches ?? [])) {
    below = Math.max(below, branch.height);
  }
  const weight = objectWeight(schema, type);
  const plan = { typeName: type.name, weight, fields, dynamic, height: below + 1 };
  plans.set(key, plan);
  return plan;
}

function fieldPlan(
  compilation: Compilation,
  type: GraphQLObjectType,
  key: string,
  group: FieldGroup,
  sizedFields: ReadonlySet<string> | undefined,
  level: number,
): FieldPlan | undefined {
  const { schema } = compilation;
  const field = type.getFields()[group.name];
  // `__typename` and introspection are answered by the server itself: they cost nothing.
  if (!field) return undefined;
  const coordinate = `${type.name}.${field.name}`;
  const args = group.nodes[0]?.node.arguments;
  // read below by the sizing and the arguments' cost, however long their values
  spendArguments(compilation.work, args);
  const listSize = fieldListSize(schema, type, field);
  const sizing = listSize && sizingOf(coordinate, field, listSize, args);
  const named = getNamedType(field.type);
  let weight = ownFieldWeight(schema, type, field);
  let branches: TypePlan[] | undefined;
  if (isCompositeType(named)) {
    // Selections kept under different conditions pass them down, so a child counts only when
    // a selection that asked for it is kept; equal conditions were decided at this level.
    compilation.work.spend(group.nodes.reduce((n, { when }) => n + when.length, 0));
    const distinct = new Set(group.nodes.map((n) => conjunctionKey(n.when))).size > 1;
    const members = group.nodes.flatMap(({ node, when, depth }): Member[] => {
      if (!node.selectionSet) return [];
      checkDepth(depth + 1);
      return [{ selectionSet: node.selectionSet, when: distinct ? when : [], depth: depth + 1 }];
    });
    const possible = isAbstractType(named) ? schema.getPossibleTypes(named) : [named];
    branches = possible.map((t) =>
      typePlan(compilation, t, members, sizing?.sizedFields, level + 1),
    );
  } else {
    weight ??= leafWeight(schema, named);
  }
  const always = group.nodes.some((n) => n.when.length === 0);
  return {
    key,
    coordinate,
    when: always ? undefined : group.nodes.map((n) => n.when),
    weight,
    listDepth: listDepth(field.type),
    sizing,
    sized: sizedFields?.has(field.name) ?? false,
    args: argumentsCost(schema, field, args),
    branches,
  };
}

function listDepth(type: GraphQLOutputType): number {
  let depth = 0;
  let t = type;
  while (isNonNullType(t) || isListType(t)) {
    if (isListType(t)) depth += 1;
    t = t.ofType;
  }
  return depth;
}

function keyOf(
  compilation: Compilation,
  type: GraphQLObjectType,
  members: readonly Member[],
  sizedFields: ReadonlySet<string> | undefined,
): string {
  compilation.work.spend(
    members.reduce((n, m) => n + m.selectionSet.selections.length + m.when.length, 0),
  );
  const sets = members.map(
    (m) =>
      `${m.selectionSet.selections.map((s) => idOf(compilation, s)).join(',')}?${conjunctionKey(m.when)}`,
  );
  return `${type.name}|${[...(sizedFields ?? [])].join(',')}|${sets.join(';')}`;
}

/** Field and inline-fragment nodes by identity; a bare spread by its fragment's name. */
function idOf({ ids }: Compilation, node: SelectionNode): string {
  if (node.kind === Kind.FRAGMENT_SPREAD && !node.directives?.length) return `.${node.name.value}`;
  let id = ids.get(node);
  if (id === undefined) ids.set(node, (id = ids.size));
  return String(id);
}
