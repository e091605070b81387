import { getMetadataStorage, type BuildSchemaOptions } from 'type-graphql';

/**
 * Makes every field that only reads a property of its object resolve the way graphql's default
 * resolver does, with no resolver of its own. Without this, type-graphql gives each such field a
 * resolver (a closure that builds a `{ root, args, context, info }` record and returns
 * `root[name]`), and the executor calls it for every field of every object — for a REST list of 30
 * issues, hundreds of calls, each with its own resolve-info object. With no resolver, graphql-jit reads the
 * property inline.
 *
 * A field keeps its resolver when something has to run around the read: a middleware or an
 * authorization rule on it (or on its class, or global to the schema), or a GraphQL name other than
 * the property's; so do the fields of a class declared `simpleResolvers: false`. Fields
 * computed by a `@FieldResolver` are not touched (type-graphql uses that resolver first).
 * A field can still ask for its own resolver with `@Field({ simple: false })`. Must run before
 * `buildSchema`.
 *
 * A getter declared a field (`@Field() get repositoryId()`) is read the same way: reading the
 * property runs the getter. type-graphql would give it a resolver that first copies a root that is
 * not an instance of the class into a new instance; every object these fields are read from is an
 * instance (an entity MikroORM or `mapRow` made), so that copy never happens and the resolver only
 * costs a call per object.
 */
export function resolvePlainFieldsByReading(options: Pick<BuildSchemaOptions, 'globalMiddlewares' | 'authChecker'>): void {
  // Global middlewares and an auth checker run inside every field's resolver: with either, none is plain.
  if (options.globalMiddlewares?.length || options.authChecker) return;
  const storage = getMetadataStorage();
  const guardedClasses = new Set<unknown>([
    ...[...storage.resolverMiddlewares, ...storage.authorizedResolver].map((each) => each.target),
    // A class that asked for resolvers (`simpleResolvers: false`) keeps them.
    ...storage.objectTypes.filter((type) => type.simpleResolvers === false).map((type) => type.target),
  ]);
  const guardedFields = [...storage.middlewares, ...storage.authorizedFields];
  const guarded = (target: unknown, name: string) =>
    guardedClasses.has(target) || guardedFields.some((each) => each.target === target && each.fieldName === name);
  for (const field of storage.fields) {
    if (field.simple !== undefined || field.name !== field.schemaName || guarded(field.target, field.name)) continue;
    field.simple = true;
    const getter = storage.fieldResolvers.findIndex(
      (each) =>
        each.kind === 'internal' && each.target === field.target && each.methodName === field.name && isGetter(field.target, field.name),
    );
    if (getter >= 0) storage.fieldResolvers.splice(getter, 1);
  }
}

function isGetter(target: { prototype: object }, name: string): boolean {
  return typeof Object.getOwnPropertyDescriptor(target.prototype, name)?.get === 'function';
}
