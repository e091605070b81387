import { defaultFieldResolver, type GraphQLSchema } from 'graphql';

/**
 * Runs `before` with the request's context as each root field of a mutation starts. The root
 * fields of a mutation run one after another, each with everything below it, before the next
 * starts: `before` sees what the fields before it left.
 */
export function beforeEachMutationField(schema: GraphQLSchema, before: (context: object) => void): GraphQLSchema {
  for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
    const resolve = field.resolve ?? defaultFieldResolver;
    field.resolve = (source, args, context: object, info) => {
      before(context);
      return resolve(source, args, context, info);
    };
  }
  return schema;
}
