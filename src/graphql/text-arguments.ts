import { defaultFieldResolver, isObjectType, type GraphQLSchema } from 'graphql';
import { invalid } from '../errors/domain-error.js';

/**
 * PostgreSQL text cannot hold U+0000, and a lone UTF-16 surrogate cannot be
 * written as JSON the database accepts (event payloads are jsonb). Such a
 * string would fail deep in a query, as a 500; it is the client's mistake.
 */
function isStorable(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/** The first argument (or input field, by its own name) holding unstorable text, or null. */
function unstorableField(value: unknown, field: string): string | null {
  if (typeof value === 'string') return isStorable(value) ? null : field;
  if (Array.isArray(value)) {
    for (const item of value) {
      const found = unstorableField(item, field);
      if (found) return found;
    }
  } else if (value && typeof value === 'object' && !(value instanceof Date)) {
    for (const [key, item] of Object.entries(value)) {
      const found = unstorableField(item, key);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Wraps the resolver of every field that takes arguments so that text no
 * database column can store is refused up front as VALIDATION_FAILED (422
 * in REST), whichever surface sent it. Fields without arguments are left
 * alone: most of a response's fields pay nothing.
 */
export function guardTextArguments(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.args.length === 0) continue;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args, context, info) => {
        const bad = unstorableField(args, field.name);
        if (bad) throw invalid(bad, 'invalid_characters', `${bad} contains a NUL character or an unpaired surrogate`);
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}
