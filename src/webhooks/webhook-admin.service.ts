import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Permission, requireScope } from '../auth/permissions.js';
import { User } from '../auth/user.entity.js';
import { lockRow } from '../db/lock-row.js';
import { isEventType } from '../events/event-types.js';
import { actorRef, repositoryRef } from '../events/payloads.js';
import { conflict, invalid, notFound, Problems } from '../errors/domain-error.js';
import { connection, type Connection, type Page } from '../graphql/pagination.js';
import type { Repositories } from '../repositories/repository.service.js';
import type { Principal } from '../principal.js';
import type { WebhookDelivery } from './webhook-delivery.js';
import { Delivery, DeliveryStatus } from './delivery.entity.js';
import { DestinationPolicy } from './destination-policy.js';
import type { CreateWebhookInput, CreatedWebhook, UpdateWebhookInput } from './webhook.inputs.js';
import { Webhook } from './webhook.entity.js';
import { webhookPayload, zen } from './webhook.payload.js';
import { cancelPendingDeliveries } from './webhook-health.js';

const MAX_WEBHOOKS = 20;
const MAX_URL = 2048;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The collaborators of the webhook use cases, given once at start-up. */
export interface WebhookDeps {
  repositories: Repositories;
  /** The delivery runtime: destination policy, secret box, and waking the worker. */
  delivery: WebhookDelivery;
  baseUrl: string;
}

/**
 * The webhooks a caller manages: a repository's (admin permission and the
 * admin:repo_hook scope), or with no repository their own owner-level ones.
 */
async function parentFor(deps: WebhookDeps, em: EntityManager, viewer: Principal, repositoryId: string | null | undefined) {
  if (repositoryId) return { repository: await deps.repositories.find(em, viewer, repositoryId, Permission.ADMIN, 'admin:repo_hook') };
  requireScope(viewer, 'admin:repo_hook');
  return { repository: null };
}

async function listWebhooks(deps: WebhookDeps, em: EntityManager, viewer: Principal, repositoryId: string | null): Promise<Webhook[]> {
  const { repository } = await parentFor(deps, em, viewer, repositoryId);
  const where = repository ? { repository } : { repository: null, user: viewer.userId };
  return em.find(Webhook, where, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

/** A webhook of that repository (or, without one, the caller's own owner-level webhook); 404 otherwise. */
async function webhookFor(
  deps: WebhookDeps,
  em: EntityManager,
  viewer: Principal,
  id: string,
  repositoryId: string | null | undefined,
): Promise<Webhook> {
  const { repository } = await parentFor(deps, em, viewer, repositoryId);
  const hook = /^hook_[0-9a-z]{26}$/.test(id)
    ? await em.findOne(Webhook, repository ? { id, repository } : { id, repository: null, user: viewer.userId })
    : null;
  if (!hook) throw notFound('webhook');
  return hook;
}

function checkUrl(url: string, policy: DestinationPolicy, problems: Problems): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return problems.add('url', 'invalid_url', 'url must be an absolute http or https URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    problems.add('url', 'invalid_url', 'url must use http or https');
  } else if (parsed.username || parsed.password) {
    problems.add('url', 'credentials_in_url', 'url must not contain credentials');
  } else if (url.length > MAX_URL) {
    problems.add('url', 'too_long', `url is at most ${MAX_URL} characters`);
  } else {
    const literal = DestinationPolicy.literalAddress(parsed);
    if (literal && !policy.allows(literal, literal)) {
      problems.add('url', 'forbidden_destination', `${literal} is not an allowed webhook destination (CAIRN_WEBHOOK_ALLOWED_HOSTS)`);
    }
  }
}

function checkEvents(events: string[], problems: Problems): string[] {
  const unique = [...new Set(events)];
  if (unique.length === 0) problems.add('events', 'missing', 'events must name at least one event type, or be ["*"]');
  if (unique.includes('*') && unique.length > 1) problems.add('events', 'invalid', '"*" must be the only value');
  for (const event of unique) {
    if (event !== '*' && !isEventType(event)) problems.add('events', 'unknown_event', `unknown event type "${event}"`);
  }
  return unique;
}

function checkSecret(secret: string | null | undefined, problems: Problems): void {
  if (secret !== undefined && secret !== null && (secret.length < 1 || secret.length > 256)) {
    problems.add('secret', 'invalid_length', 'secret must be 1 to 256 characters');
  }
}

/** Creating a webhook sends nothing; a generated secret is returned this once. */
async function createWebhook(deps: WebhookDeps, em: EntityManager, viewer: Principal, input: CreateWebhookInput): Promise<CreatedWebhook> {
  const { repository } = await parentFor(deps, em, viewer, input.repositoryId);
  const { delivery } = deps;
  const problems = new Problems();
  checkUrl(input.url, delivery.policy, problems);
  const events = checkEvents(input.events ?? ['push'], problems);
  checkSecret(input.secret, problems);
  problems.throwIfAny();

  const generated = input.secret ? null : randomBytes(32).toString('hex');
  const hook = await em.transactional(async (tx) => {
    // The parent's row lock makes count-then-insert atomic: concurrent creates cannot pass the limit together.
    if (repository) await lockRow(tx, 'repositories', repository.id);
    else await lockRow(tx, 'users', viewer.userId);
    const existing = await tx.count(Webhook, repository ? { repository } : { repository: null, user: viewer.userId });
    if (existing >= MAX_WEBHOOKS) throw conflict(`at most ${MAX_WEBHOOKS} webhooks per repository or owner`);
    return tx.create(Webhook, {
      repository,
      user: tx.getReference(User, viewer.userId),
      url: input.url,
      events,
      active: input.active ?? true,
      secretCiphertext: delivery.box.seal(input.secret ?? generated!),
    });
  });
  return { webhook: hook, secret: generated };
}

async function updateWebhook(
  deps: WebhookDeps,
  em: EntityManager,
  viewer: Principal,
  id: string,
  repositoryId: string | null | undefined,
  input: UpdateWebhookInput,
): Promise<Webhook> {
  const hook = await webhookFor(deps, em, viewer, id, repositoryId);
  const { delivery } = deps;
  const problems = new Problems();
  for (const field of ['url', 'secret', 'events', 'active'] as const) {
    if (input[field] === null) problems.add(field, 'missing', `${field} cannot be null`);
  }
  if (input.url != null) checkUrl(input.url, delivery.policy, problems);
  const events = input.events != null ? checkEvents(input.events, problems) : null;
  checkSecret(input.secret, problems);
  problems.throwIfAny();

  const deactivating = input.active === false && hook.active;
  if (input.url != null) hook.url = input.url;
  if (events) hook.events = events;
  if (input.secret != null) hook.secretCiphertext = delivery.box.seal(input.secret);
  if (input.active === true && !hook.active) {
    // Re-activation starts afresh: the failure streak and the disabling are forgotten.
    hook.active = true;
    hook.failingSince = null;
    hook.disabledAt = null;
    hook.disabledReason = null;
  }
  if (deactivating) hook.active = false;
  hook.updatedAt = new Date();
  await em.transactional(async (tx) => {
    await tx.flush();
    if (deactivating) await cancelPendingDeliveries(tx, [hook.id]);
  });
  return hook;
}

/** Deleting a webhook cancels (and with it removes) its deliveries. */
async function deleteWebhook(
  deps: WebhookDeps,
  em: EntityManager,
  viewer: Principal,
  id: string,
  repositoryId: string | null | undefined,
): Promise<boolean> {
  const hook = await webhookFor(deps, em, viewer, id, repositoryId);
  await em.transactional(async (tx) => {
    await cancelPendingDeliveries(tx, [hook.id]);
    await tx.execute('delete from webhooks where id = ?', [hook.id]);
  });
  return true;
}

/** Sends a `ping` now: the webhook's record, a zen line, and who asked. */
async function pingWebhook(
  deps: WebhookDeps,
  em: EntityManager,
  viewer: Principal,
  id: string,
  repositoryId: string | null | undefined,
): Promise<Delivery> {
  const hook = await webhookFor(deps, em, viewer, id, repositoryId);
  if (!hook.active) throw conflict('the webhook is not active: activate it first');
  await em.populate(hook, ['repository.owner']);
  const body = JSON.stringify({
    event: 'ping',
    zen: zen(),
    hook_id: hook.id,
    hook: webhookPayload(hook),
    ...(hook.repository ? { repository: repositoryRef(hook.repository, deps.baseUrl) } : {}),
    sender: actorRef({ id: viewer.userId, login: viewer.login }),
  });
  const delivery = em.create(Delivery, { id: randomUUID(), webhook: hook, event: 'ping', body, nextAttemptAt: new Date() });
  await em.flush();
  deps.delivery.wake([hook.id]);
  return delivery;
}

/** A new series of attempts for a finished delivery: same UUID, same body, trigger `redelivery`. */
async function redeliver(
  deps: WebhookDeps,
  em: EntityManager,
  viewer: Principal,
  webhookId: string,
  deliveryId: string,
  repositoryId: string | null | undefined,
): Promise<Delivery> {
  const hook = await webhookFor(deps, em, viewer, webhookId, repositoryId);
  const delivery = await deliveryOf(em, hook, deliveryId);
  if (!hook.active) throw conflict('the webhook is not active: activate it first');
  const rows = await em.execute<{ id: string }[]>(
    `update deliveries set status = 'pending', series = series + 1, series_attempts = 0, next_attempt_at = now(),
            completed_at = null, claimed_until = null
      where id = ? and status <> 'pending' returning id`,
    [delivery.id],
  );
  if (rows.length === 0) throw conflict('the delivery is still in progress');
  deps.delivery.wake([hook.id]);
  return (await em.refresh(delivery))!;
}

async function deliveryOf(em: EntityManager, hook: Webhook, deliveryId: string): Promise<Delivery> {
  const delivery = UUID.test(deliveryId) ? await em.findOne(Delivery, { id: deliveryId.toLowerCase(), webhook: hook }) : null;
  if (!delivery) throw notFound('delivery');
  return delivery;
}

/** Delivery history, newest first, optionally by status and event type. */
async function listDeliveries(
  em: EntityManager,
  hook: Webhook,
  filter: { status?: DeliveryStatus | null; event?: string | null },
  page: Page,
): Promise<Connection<Delivery>> {
  if (filter.event && !isEventType(filter.event)) throw invalid('event', 'unknown_event', `unknown event type "${filter.event}"`);
  const where = {
    webhook: hook,
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.event ? { event: filter.event } : {}),
  };
  const [items, total] = await em.findAndCount(Delivery, where, {
    orderBy: { createdAt: 'desc', id: 'desc' },
    limit: page.limit,
    offset: page.offset,
  });
  return connection(items, total, page);
}

/** The webhook use cases with their collaborators bound, as transports call them. */
export class WebhookAdmin {
  constructor(private readonly deps: WebhookDeps) {}

  list(em: EntityManager, viewer: Principal, repositoryId: string | null) {
    return listWebhooks(this.deps, em, viewer, repositoryId);
  }

  get(em: EntityManager, viewer: Principal, id: string, repositoryId: string | null | undefined) {
    return webhookFor(this.deps, em, viewer, id, repositoryId);
  }

  create(em: EntityManager, viewer: Principal, input: CreateWebhookInput) {
    return createWebhook(this.deps, em, viewer, input);
  }

  update(em: EntityManager, viewer: Principal, id: string, repositoryId: string | null | undefined, input: UpdateWebhookInput) {
    return updateWebhook(this.deps, em, viewer, id, repositoryId, input);
  }

  delete(em: EntityManager, viewer: Principal, id: string, repositoryId: string | null | undefined) {
    return deleteWebhook(this.deps, em, viewer, id, repositoryId);
  }

  ping(em: EntityManager, viewer: Principal, id: string, repositoryId: string | null | undefined) {
    return pingWebhook(this.deps, em, viewer, id, repositoryId);
  }

  redeliver(em: EntityManager, viewer: Principal, webhookId: string, deliveryId: string, repositoryId: string | null | undefined) {
    return redeliver(this.deps, em, viewer, webhookId, deliveryId, repositoryId);
  }

  deliveries(em: EntityManager, hook: Webhook, filter: { status?: DeliveryStatus | null; event?: string | null }, page: Page) {
    return listDeliveries(em, hook, filter, page);
  }

  delivery(em: EntityManager, hook: Webhook, deliveryId: string) {
    return deliveryOf(em, hook, deliveryId);
  }
}
