import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import { CreatesContent } from '../ratelimit/creates-content.js';
import type { ResolverContext } from '../graphql/context.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { Repository } from '../repositories/repository.entity.js';
import { Delivery, DeliveryAttemptRecord, DeliveryRequest, DeliveryResponse, DeliveryStatus } from './delivery.entity.js';
import { CreatedWebhook, CreateWebhookInput, UpdateWebhookInput } from './webhook.inputs.js';
import { Webhook } from './webhook.entity.js';
import type { WebhookAdmin } from './webhook-admin.service.js';

type Context = ResolverContext<{ webhookAdmin: WebhookAdmin }>;

const DeliveryConnection = ConnectionType(Delivery, 'DeliveryConnection');

const REPOSITORY_ARG = {
  nullable: true,
  description: "The webhook's repository; omit for your own owner-level webhooks.",
} as const;

@Resolver(() => Webhook)
export class WebhookResolver {
  @Query(() => [Webhook], { description: 'Your owner-level webhooks (all your repositories).' })
  userWebhooks(@Ctx() ctx: Context): Promise<Webhook[]> {
    return ctx.services.webhookAdmin.list(ctx.em, ctx.viewer, null);
  }

  @Query(() => Webhook, { nullable: true, description: 'One of your owner-level webhooks.' })
  userWebhook(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<Webhook> {
    return ctx.services.webhookAdmin.get(ctx.em, ctx.viewer, id, null);
  }

  @UseMiddleware(CreatesContent)
  @Mutation(() => CreatedWebhook, { description: 'Needs admin on the repository and the admin:repo_hook scope. Sends nothing.' })
  createWebhook(@Arg('input', () => CreateWebhookInput) input: CreateWebhookInput, @Ctx() ctx: Context): Promise<CreatedWebhook> {
    return ctx.services.webhookAdmin.create(ctx.em, ctx.viewer, input);
  }

  @Mutation(() => Webhook)
  updateWebhook(
    @Arg('id', () => ID) id: string,
    @Arg('repositoryId', () => ID, REPOSITORY_ARG) repositoryId: string | null,
    @Arg('input', () => UpdateWebhookInput) input: UpdateWebhookInput,
    @Ctx() ctx: Context,
  ): Promise<Webhook> {
    return ctx.services.webhookAdmin.update(ctx.em, ctx.viewer, id, repositoryId, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes the webhook; its pending deliveries are cancelled.' })
  deleteWebhook(
    @Arg('id', () => ID) id: string,
    @Arg('repositoryId', () => ID, REPOSITORY_ARG) repositoryId: string | null,
    @Ctx() ctx: Context,
  ): Promise<boolean> {
    return ctx.services.webhookAdmin.delete(ctx.em, ctx.viewer, id, repositoryId);
  }

  @Mutation(() => Delivery, { description: 'Sends a ping event to the webhook now.' })
  pingWebhook(
    @Arg('id', () => ID) id: string,
    @Arg('repositoryId', () => ID, REPOSITORY_ARG) repositoryId: string | null,
    @Ctx() ctx: Context,
  ): Promise<Delivery> {
    return ctx.services.webhookAdmin.ping(ctx.em, ctx.viewer, id, repositoryId);
  }

  @Mutation(() => Delivery, { description: 'A new series of attempts for a finished delivery (same UUID and body).' })
  redeliverWebhookDelivery(
    @Arg('webhookId', () => ID) webhookId: string,
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Arg('repositoryId', () => ID, REPOSITORY_ARG) repositoryId: string | null,
    @Ctx() ctx: Context,
  ): Promise<Delivery> {
    return ctx.services.webhookAdmin.redeliver(ctx.em, ctx.viewer, webhookId, deliveryId, repositoryId);
  }

  @FieldResolver(() => DeliveryConnection, { description: 'Delivery history, newest first.' })
  deliveries(
    @Root() hook: Webhook,
    @Args(() => PageArgs) page: PageArgs,
    @Arg('status', () => DeliveryStatus, { nullable: true }) status: DeliveryStatus | null,
    @Arg('event', () => String, { nullable: true }) event: string | null,
    @Ctx() ctx: Context,
  ) {
    return ctx.services.webhookAdmin.deliveries(ctx.em, hook, { status, event }, resolvePage(page));
  }

  @FieldResolver(() => Delivery, { nullable: true, description: 'NOT_FOUND when the webhook has no such delivery.' })
  delivery(@Root() hook: Webhook, @Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<Delivery> {
    return ctx.services.webhookAdmin.delivery(ctx.em, hook, id);
  }
}

/** Webhooks as a field of a repository. */
@Resolver(() => Repository)
export class RepositoryWebhooksResolver {
  @FieldResolver(() => [Webhook], { description: 'Needs admin permission and the admin:repo_hook scope.' })
  webhooks(@Root() repo: Repository, @Ctx() ctx: Context): Promise<Webhook[]> {
    return ctx.services.webhookAdmin.list(ctx.em, ctx.viewer, repo.id);
  }

  @FieldResolver(() => Webhook, { nullable: true })
  webhook(@Root() repo: Repository, @Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<Webhook> {
    return ctx.services.webhookAdmin.get(ctx.em, ctx.viewer, id, repo.id);
  }
}

/** The details of one delivery: what was sent, what came back, every attempt. */
@Resolver(() => Delivery)
export class DeliveryResolver {
  @FieldResolver(() => DeliveryRequest)
  async request(@Root() delivery: Delivery, @Ctx() ctx: Context): Promise<DeliveryRequest> {
    await ctx.em.populate(delivery, ['body', 'lastRequestHeaders', 'webhook']);
    return { url: delivery.lastRequestUrl ?? delivery.webhook.url, headers: delivery.lastRequestHeaders ?? {}, body: delivery.body };
  }

  @FieldResolver(() => DeliveryResponse, { nullable: true, description: 'The latest response, if any came.' })
  async response(@Root() delivery: Delivery, @Ctx() ctx: Context): Promise<DeliveryResponse | null> {
    await ctx.em.populate(delivery, ['lastResponse']);
    return delivery.lastResponse;
  }

  @FieldResolver(() => [DeliveryAttemptRecord], { description: 'Every attempt, oldest first.' })
  attempts(@Root() delivery: Delivery, @Ctx() ctx: Context): Promise<DeliveryAttemptRecord[]> {
    return ctx.em.find(DeliveryAttemptRecord, { delivery }, { orderBy: { number: 'asc' } });
  }
}
