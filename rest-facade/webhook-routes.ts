import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
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
import { pageParams, type Route, type RouteInput } from './routes.js';

/** Where the webhooks of a route family live: a repository's, or the caller's owner-level ones. */
interface WebhookParent {
  base: string;
  /** `{id}` of the repository, or nothing for owner-level webhooks. */
  scope: (input: RouteInput) => { id?: string };
  /** Picks the webhook object out of a query result. */
  hook: (data: any) => any;
  list: TypedDocumentNode<any, any>;
  listResult: (data: any) => unknown;
  get: TypedDocumentNode<any, any>;
  deliveries: TypedDocumentNode<any, any>;
  delivery: TypedDocumentNode<any, any>;
}

/** The webhook endpoints for one parent; the same set serves `/repos/:id/webhooks` and `/user/webhooks`. */
function webhookRoutes(parent: WebhookParent): Route[] {
  const { base, scope } = parent;
  const hook = (input: RouteInput) => ({ ...scope(input), hookId: input.params.hook_id });
  return [
    {
      method: 'post',
      path: base,
      document: CreateWebhookDocument,
      variables: (input) => ({ input: { ...input.body, repository_id: scope(input).id ?? null } }),
      // The generated secret is part of the creation response only.
      result: (data) => {
        const created = data.create_webhook;
        return created && { ...created.webhook, ...(created.secret ? { secret: created.secret } : {}) };
      },
      status: 201,
      body: true,
    },
    { method: 'get', path: base, document: parent.list, variables: scope, result: parent.listResult, kind: 'array' },
    { method: 'get', path: `${base}/:hook_id`, document: parent.get, variables: hook, result: parent.hook },
    {
      method: 'patch',
      path: `${base}/:hook_id`,
      document: UpdateWebhookDocument,
      variables: (input) => ({ ...hook(input), input: input.body }),
      result: (data) => data.update_webhook,
      body: true,
    },
    {
      method: 'delete',
      path: `${base}/:hook_id`,
      document: DeleteWebhookDocument,
      variables: hook,
      result: (d) => d.delete_webhook,
      kind: 'empty',
    },
    {
      method: 'post',
      path: `${base}/:hook_id/pings`,
      document: PingWebhookDocument,
      variables: hook,
      result: (data) => data.ping_webhook,
      status: 202,
    },
    {
      method: 'get',
      path: `${base}/:hook_id/deliveries`,
      document: parent.deliveries,
      variables: (input) => ({ ...hook(input), status: input.query.status, event: input.query.event, ...pageParams(input.query) }),
      result: (data) => parent.hook(data)?.deliveries,
      kind: 'envelope',
    },
    {
      method: 'get',
      path: `${base}/:hook_id/deliveries/:delivery_id`,
      document: parent.delivery,
      variables: (input) => ({ ...hook(input), deliveryId: input.params.delivery_id }),
      result: (data) => parent.hook(data)?.delivery,
    },
    {
      method: 'post',
      path: `${base}/:hook_id/deliveries/:delivery_id/redeliver`,
      document: RedeliverWebhookDeliveryDocument,
      variables: (input) => ({ ...hook(input), deliveryId: input.params.delivery_id }),
      result: (data) => data.redeliver_webhook_delivery,
      status: 202,
    },
  ];
}

export const WEBHOOK_ROUTES: Route[] = [
  ...webhookRoutes({
    base: '/repos/:id/webhooks',
    scope: ({ params }) => ({ id: params.id }),
    hook: (data) => data.repository?.webhook,
    list: ListRepositoryWebhooksDocument,
    listResult: (data) => data.repository?.webhooks,
    get: GetRepositoryWebhookDocument,
    deliveries: ListRepositoryWebhookDeliveriesDocument,
    delivery: GetRepositoryWebhookDeliveryDocument,
  }),
  ...webhookRoutes({
    base: '/user/webhooks',
    scope: () => ({}),
    hook: (data) => data.user_webhook,
    list: ListUserWebhooksDocument,
    listResult: (data) => data.user_webhooks,
    get: GetUserWebhookDocument,
    deliveries: ListUserWebhookDeliveriesDocument,
    delivery: GetUserWebhookDeliveryDocument,
  }),
];
