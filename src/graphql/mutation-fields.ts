import { Kind, OperationTypeNode, type ASTVisitor, type SelectionSetNode, type ValidationContext } from 'graphql';
import { limitError } from './request-error.js';

/**
 * Validation rule: a mutation may have at most `max` fields at its root. Each is a change of its
 * own (500 aliased `createAccessToken` would mint 500 tokens), so the operation is refused before
 * any of them runs. Fields reached through inline fragments and fragment spreads count, each
 * fragment measured once however often it is spread; `__typename` changes nothing and is free.
 */
export function mutationFieldsLimit(max: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragmentFields = new Map<string, number>();
    const countFragment = (name: string): number => {
      const known = fragmentFields.get(name);
      if (known !== undefined) return known;
      fragmentFields.set(name, 0); // a fragment spreading itself (refused by GraphQL's own rules) adds nothing
      const fragment = context.getFragment(name);
      const fields = fragment ? count(fragment.selectionSet) : 0;
      fragmentFields.set(name, fields);
      return fields;
    };
    const count = (set: SelectionSetNode): number => {
      let fields = 0;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) fields += selection.name.value === '__typename' ? 0 : 1;
        else if (selection.kind === Kind.INLINE_FRAGMENT) fields += count(selection.selectionSet);
        else fields += countFragment(selection.name.value);
      }
      return fields;
    };
    return {
      OperationDefinition(node) {
        if (node.operation !== OperationTypeNode.MUTATION) return;
        const fields = count(node.selectionSet);
        if (fields > max) context.reportError(limitError(`the mutation has ${fields} fields at its root, more than the limit of ${max}`));
      },
    };
  };
}
