import 'reflect-metadata';
import type { GraphQLSchema } from 'graphql';
import { GraphQLDateTime } from 'graphql-scalars';
import { buildSchema, type BuildSchemaOptions } from 'type-graphql';
import { RESOLVERS } from './capabilities.js';
import { freshLoadsPerMutation } from './graphql/batch-loader.js';
import { refuseAfterTokenEnds } from './graphql/ended-tokens.js';
import { resolvePlainFieldsByReading } from './graphql/plain-fields.js';
import { guardTextArguments } from './graphql/text-arguments.js';

let built: Promise<GraphQLSchema> | undefined;

/** The one schema, shared by Apollo (/graphql) and the REST facade. */
export function getSchema(): Promise<GraphQLSchema> {
  if (!built) {
    const options: BuildSchemaOptions = {
      resolvers: [...RESOLVERS],
      scalarsMap: [{ type: Date, scalar: GraphQLDateTime }],
      validate: false, // inputs are validated by the use cases, with field-level details
    };
    resolvePlainFieldsByReading(options);
    built = buildSchema(options).then(guardTextArguments).then(freshLoadsPerMutation).then(refuseAfterTokenEnds);
  }
  return built;
}
