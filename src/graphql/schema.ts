import 'reflect-metadata';
import type { GraphQLSchema } from 'graphql';
import { GraphQLDateTime } from 'graphql-scalars';
import { buildSchema } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver.js';
import { GitResolver } from '../git/git.resolver.js';
import { IssueResolver } from '../issues/issue.resolver.js';
import { PullRequestResolver, RepositoryPullsResolver } from '../pulls/pull-request.resolver.js';
import { RepositoryResolver } from '../repositories/repository.resolver.js';
import { guardTextArguments } from './text-arguments.js';
import { DeliveryResolver, RepositoryWebhooksResolver, WebhookResolver } from '../webhooks/webhook.resolver.js';

/** Every resolver of the service; a capability adds its resolvers here. */
const RESOLVERS = [
  AuthResolver,
  RepositoryResolver,
  IssueResolver,
  PullRequestResolver,
  RepositoryPullsResolver,
  GitResolver,
  WebhookResolver,
  RepositoryWebhooksResolver,
  DeliveryResolver,
] as const;

let built: Promise<GraphQLSchema> | undefined;

/** The one schema, shared by Apollo (/graphql) and the REST facade. */
export function getSchema(): Promise<GraphQLSchema> {
  built ??= buildSchema({
    resolvers: [...RESOLVERS],
    scalarsMap: [{ type: Date, scalar: GraphQLDateTime }],
    validate: false, // inputs are validated by the services, with field-level details
  }).then(guardTextArguments);
  return built;
}
