import {
  Kind,
  OperationTypeNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/**
 * Whether `operation` is a query whose root selects introspection fields and `__typename` only
 * (through fragments too): the server answers those itself, the estimator prices them 0, and
 * the budget lets anyone run them without asking who. One pass over the root's selections and
 * the fragments they spread (each read once, without recursion), so a caller the budget cannot
 * identify costs no more than the document's size here; `@skip` and `@include` are not read, so
 * a field they might leave out still makes the operation priced.
 */
export function onlyIntrospection(
  document: DocumentNode,
  operation: OperationDefinitionNode,
): boolean {
  if (operation.operation !== OperationTypeNode.QUERY) return false;
  let fragments: Map<string, FragmentDefinitionNode> | undefined;
  const seen = new Set<string>();
  const sets: SelectionSetNode[] = [operation.selectionSet];
  for (let set = sets.pop(); set; set = sets.pop()) {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        // validation keeps names starting `__` for introspection: a schema cannot define one
        if (!selection.name.value.startsWith('__')) return false;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        sets.push(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        fragments ??= fragmentsOf(document);
        const fragment = fragments.get(selection.name.value);
        // an unknown fragment: validation refuses the document; priced, it is refused as well
        if (!fragment) return false;
        sets.push(fragment.selectionSet);
      }
    }
  }
  return true;
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments.set(definition.name.value, definition);
    }
  }
  return fragments;
}
