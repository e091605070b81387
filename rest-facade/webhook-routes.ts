import {
  CreateWebhookDocument,
  DeleteWebhookDocument,
  GetRepositoryWebhookDeliveryDocument,
  GetRepositoryWebhookDocument,
  GetUserWebhookDeliveryDocument,
  GetUserWebhookDocument,
  ListRepositoryWebhookDeliveriesDocument,
  ListRepositoryWebhooksDocument,
  ListUserWebhookDeliveriesDocument,
  ListUserWebhooksDocument,
  PingWebhookDocument,
  RedeliverWebhookDeliveryDocument,
  UpdateWebhookDocument,
} from './generated/graphql.js';
import { route, type RestRoute, type RouteInput } from './route.js';
import { PAGE_QUERY, pageParams } from './routes.js';

/**
 * Where the webhooks of a route family live, `/repos/:id/webhooks` or `/user/webhooks`, and the
 * variables its routes pass: the repository `{id}` (nothing for the caller's owner-level webhooks),
 * then the webhook and delivery the path names.
 */
function webhookFamily<Scope extends { id?: string }>(base: string, scope: (input: RouteInput) => Scope) {
  const hook = (input: RouteInput) => ({ ...scope(input), hookId: input.params.hook_id });
  const delivery = (input: RouteInput) => ({ ...hook(input), deliveryId: input.params.delivery_id });
  const deliveries = (input: RouteInput) => ({
    ...hook(input),
    status: input.query.status,
    event: input.query.event,
    ...pageParams(input.query),
  });
  const paths = {
    hooks: base,
    hook: `${base}/:hook_id`,
    deliveries: `${base}/:hook_id/deliveries`,
    delivery: `${base}/:hook_id/deliveries/:delivery_id`,
  };
  return { scope, hook, delivery, deliveries, paths };
}

type WebhookFamily<Scope extends { id?: string }> = ReturnType<typeof webhookFamily<Scope>>;

/** The reads, which differ by family: each has its own query, with the webhook at another place in the result. */
interface WebhookReads {
  list: RestRoute;
  get: RestRoute;
  deliveries: RestRoute;
  delivery: RestRoute;
}

/**
 * The endpoints of one family: its reads, and the mutations, which serve both families (the
 * repository's `{id}` is a variable, absent for owner-level webhooks). Listed in this order, which is
 * the order the `Allow` header of a 405 names the methods of a path in.
 */
function webhookRoutes({ scope, hook, delivery, paths }: WebhookFamily<{ id?: string }>, reads: WebhookReads): RestRoute[] {
  return [
    route({
      method: 'post',
      path: paths.hooks,
      document: CreateWebhookDocument,
      variables: (input) => ({ input: { ...input.body, repository_id: scope(input).id ?? null } }),
      // The generated secret is part of the creation response only.
      resultPath: ['create_webhook'],
      spread: 'webhook',
      status: 201,
      body: { input: 'input', fromPath: ['repository_id'] },
      answers: ['CONFLICT'],
    }),
    reads.list,
    reads.get,
    route({
      method: 'patch',
      path: paths.hook,
      document: UpdateWebhookDocument,
      variables: (input) => ({ ...hook(input), input: input.body }),
      resultPath: ['update_webhook'],
      body: { input: 'input' },
    }),
    route({
      method: 'delete',
      path: paths.hook,
      document: DeleteWebhookDocument,
      variables: hook,
      resultPath: ['delete_webhook'],
      kind: 'empty',
    }),
    route({
      method: 'post',
      path: `${paths.hook}/pings`,
      document: PingWebhookDocument,
      variables: hook,
      resultPath: ['ping_webhook'],
      status: 202,
      answers: ['CONFLICT'],
    }),
    reads.deliveries,
    reads.delivery,
    route({
      method: 'post',
      path: `${paths.delivery}/redeliver`,
      document: RedeliverWebhookDeliveryDocument,
      variables: delivery,
      resultPath: ['redeliver_webhook_delivery'],
      status: 202,
      answers: ['CONFLICT'],
    }),
  ];
}

/** The query parameters of a webhook's deliveries; `deliveries` reads them. */
const DELIVERY_QUERY = [
  { name: 'status', description: 'Only deliveries in this state.' },
  { name: 'event', description: 'Only deliveries of this event.' },
  ...PAGE_QUERY,
];

const repository = webhookFamily('/repos/:id/webhooks', ({ params }) => ({ id: params.id }));
const user = webhookFamily('/user/webhooks', () => ({}));

export const WEBHOOK_ROUTES: RestRoute[] = [
  ...webhookRoutes(repository, {
    list: route({
      method: 'get',
      path: repository.paths.hooks,
      document: ListRepositoryWebhooksDocument,
      variables: repository.scope,
      resultPath: ['repository', 'webhooks'],
      kind: 'array',
      answers: ['FORBIDDEN'],
    }),
    get: route({
      method: 'get',
      path: repository.paths.hook,
      document: GetRepositoryWebhookDocument,
      variables: repository.hook,
      resultPath: ['repository', 'webhook'],
      answers: ['FORBIDDEN'],
    }),
    deliveries: route({
      method: 'get',
      path: repository.paths.deliveries,
      document: ListRepositoryWebhookDeliveriesDocument,
      variables: repository.deliveries,
      resultPath: ['repository', 'webhook', 'deliveries'],
      query: DELIVERY_QUERY,
      kind: 'envelope',
      answers: ['FORBIDDEN'],
    }),
    delivery: route({
      method: 'get',
      path: repository.paths.delivery,
      document: GetRepositoryWebhookDeliveryDocument,
      variables: repository.delivery,
      resultPath: ['repository', 'webhook', 'delivery'],
      answers: ['FORBIDDEN'],
    }),
  }),
  ...webhookRoutes(user, {
    list: route({
      method: 'get',
      path: user.paths.hooks,
      document: ListUserWebhooksDocument,
      variables: user.scope,
      resultPath: ['user_webhooks'],
      kind: 'array',
      answers: ['FORBIDDEN'],
    }),
    get: route({
      method: 'get',
      path: user.paths.hook,
      document: GetUserWebhookDocument,
      variables: user.hook,
      resultPath: ['user_webhook'],
      answers: ['FORBIDDEN'],
    }),
    deliveries: route({
      method: 'get',
      path: user.paths.deliveries,
      document: ListUserWebhookDeliveriesDocument,
      variables: user.deliveries,
      resultPath: ['user_webhook', 'deliveries'],
      query: DELIVERY_QUERY,
      kind: 'envelope',
      answers: ['FORBIDDEN'],
    }),
    delivery: route({
      method: 'get',
      path: user.paths.delivery,
      document: GetUserWebhookDeliveryDocument,
      variables: user.delivery,
      resultPath: ['user_webhook', 'delivery'],
      answers: ['FORBIDDEN'],
    }),
  }),
];
