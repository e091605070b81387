import {
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  Kind,
  TypeInfo,
  typeFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type GraphQLInputField,
  type GraphQLInputObjectType,
  type GraphQLInputType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { snakeCase } from '../src/http/error-answers.js';

/**
 * The REST dialect of a GraphQL value: snake_case keys and lowercase enum
 * values (`default_branch`, `"open"`), where GraphQL says `defaultBranch`
 * and `OPEN`. Both directions are derived from the schema, so a new field
 * needs no mapping code.
 */

const camelCase = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** An input type's fields by their REST names, made once per type: most bodies use only these. */
const restNames = new WeakMap<GraphQLInputObjectType, Map<string, GraphQLInputField>>();
function fieldsByRestName(type: GraphQLInputObjectType): Map<string, GraphQLInputField> {
  let byName = restNames.get(type);
  if (!byName) {
    byName = new Map(Object.values(type.getFields()).map((field) => [snakeCase(field.name), field]));
    restNames.set(type, byName);
  }
  return byName;
}

/** A JSON value that is not an array where the API takes a list (GraphQL would wrap it in one). */
export class NotAList extends Error {
  constructor(readonly field: string) {
    super(`${field} must be an array`);
  }
}

/**
 * REST JSON → GraphQL variable value of `type`: snake_case keys become
 * camelCase, keys the input type does not have are dropped (unknown
 * fields are ignored), enum strings are upper-cased. Any other wrong type
 * is left as it is for GraphQL's coercion to reject (→ 422); a lone value
 * where a list belongs, which GraphQL would accept, throws NotAList. `field`
 * is the REST name of the value, for the error.
 */
export function toGraphQLValue(value: unknown, type: GraphQLInputType, field = ''): unknown {
  const inner = getNullableType(type);
  if (value === null || value === undefined) return value;
  if (isEnumType(inner)) return typeof value === 'string' ? value.toUpperCase() : value;
  if (isListType(inner)) {
    if (!Array.isArray(value)) throw new NotAList(field);
    return value.map((item) => toGraphQLValue(item, inner.ofType, field));
  }
  if (isInputObjectType(inner)) {
    if (typeof value !== 'object' || Array.isArray(value)) return value;
    const fields = inner.getFields();
    const byRestName = fieldsByRestName(inner);
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const target = byRestName.get(key) ?? fields[camelCase(key)];
      if (target) result[target.name] = toGraphQLValue(item, target.type, field ? `${field}.${key}` : key);
    }
    return result;
  }
  return value;
}

/** How to turn one selected field of a result into REST. */
export interface FieldShape {
  key: string; // response key in the GraphQL result
  restKey: string;
  isEnum: boolean;
  /** The field's GraphQL type and description, which the OpenAPI document is written from. */
  type: GraphQLOutputType | null;
  description: string | null;
  children?: FieldShape[];
}

/** Precomputed once per operation: the REST shape of its whole result. */
export function resultShape(schema: GraphQLSchema, document: DocumentNode): FieldShape[] {
  const fragments = new Map(document.definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]));
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (!operation) throw new Error('document has no operation');

  // Inline fragment spreads so one TypeInfo walk sees every field with its type.
  const inlined = visit(operation, {
    FragmentSpread(node) {
      const fragment = fragments.get(node.name.value);
      if (!fragment) throw new Error(`unknown fragment ${node.name.value}`);
      return { kind: Kind.INLINE_FRAGMENT, typeCondition: fragment.typeCondition, selectionSet: fragment.selectionSet };
    },
  });

  const root: FieldShape[] = [];
  const stack: FieldShape[][] = [root];
  const typeInfo = new TypeInfo(schema);
  visit(
    inlined,
    visitWithTypeInfo(typeInfo, {
      Field: {
        enter(node) {
          const key = node.alias?.value ?? node.name.value;
          const type = typeInfo.getType();
          const shape: FieldShape = {
            key,
            restKey: snakeCase(key),
            isEnum: type ? isEnumType(getNamedType(type)) : false,
            type: type ?? null,
            description: typeInfo.getFieldDef()?.description ?? null,
          };
          stack[stack.length - 1]!.push(shape);
          if (node.selectionSet) {
            shape.children = [];
            stack.push(shape.children);
          }
        },
        leave(node) {
          if (node.selectionSet) stack.pop();
        },
      },
    }),
  );
  return root;
}

/** Applies a shape to a result value (objects, lists of objects, leaves). */
export function toRest(value: unknown, shape: FieldShape[]): unknown {
  if (Array.isArray(value)) return value.map((item) => toRest(item, shape));
  if (value === null || typeof value !== 'object') return value;
  let convert = converters.get(shape);
  if (!convert) converters.set(shape, (convert = compile(shape)));
  return convert(value as Record<string, unknown>);
}

type Converter = (source: Record<string, unknown>) => Record<string, unknown>;
const converters = new WeakMap<FieldShape[], Converter>();

/** What one field of a shape does to its value: decided once per field, used by both paths below. */
function fieldConverter(field: FieldShape): (item: unknown) => unknown {
  const children = field.children;
  if (children) return (item) => toRest(item, children);
  return field.isEnum ? lower : leaf;
}

/**
 * A shape's conversion of one object, as a function written for that shape: one object literal with
 * the REST keys in order, each value through its field's converter (`f0`, `f1`, … so each call site
 * sees one function). Every REST answer goes through it; a loop storing computed keys into an
 * empty object one by one took 1.6 times as long (a repository: 1.45 against 0.88 µs, two Dates'
 * toISOString included), and JSON.stringify took a tenth longer over its objects. An object missing a field of the shape (`@skip`, `@include`) takes the general path,
 * which leaves the key out.
 */
function compile(shape: FieldShape[]): Converter {
  const convert = shape.map(fieldConverter);
  const key = (field: FieldShape) => JSON.stringify(field.key);
  const present = shape.map((field) => `${key(field)} in s`).join(' && ') || 'true';
  const literal = shape.map((field, i) => `${JSON.stringify(field.restKey)}: f${i}(s[${key(field)}])`).join(', ');
  const names = convert.map((_, i) => `f${i}`);
  const body = `return (s) => (${present}) ? { ${literal} } : general(s);`;
  const general = (source: Record<string, unknown>) => {
    const result: Record<string, unknown> = {};
    shape.forEach((field, i) => {
      if (field.key in source) result[field.restKey] = convert[i]!(source[field.key]);
    });
    return result;
  };
  // Code written from the shape's own keys (GraphQL names and aliases), each quoted by JSON.stringify.
  return new Function('general', ...names, body)(general, ...convert) as Converter;
}

/** An enum value (or a list of them) as REST writes it: `OPEN` → `open`. */
function lower(item: unknown): unknown {
  if (typeof item === 'string') return item.toLowerCase();
  if (Array.isArray(item)) return item.map((v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v));
  return item;
}

/**
 * A leaf as JSON.stringify would write it (Date's toJSON): a Date, an object with toJSON, keeps V8's
 * JSON.stringify off its fast path for the whole answer, several times slower on a list.
 */
function leaf(item: unknown): unknown {
  return item instanceof Date ? item.toISOString() : item;
}

/** The declared GraphQL type of each variable of an operation. */
export function variableTypes(schema: GraphQLSchema, document: DocumentNode): Map<string, GraphQLInputType> {
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const types = new Map<string, GraphQLInputType>();
  for (const definition of operation?.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type as never) as GraphQLInputType | undefined;
    if (!type) throw new Error(`unknown type of variable $${definition.variable.name.value}`);
    types.set(definition.variable.name.value, type);
  }
  return types;
}
