import type { Permission } from '../auth/permissions.js';
import type { Changes, NoFields } from '../events/event-map.js';
import type { ActorRef } from '../events/payloads.js';

/** The events the repositories capability records. */
declare module '../events/event-map.js' {
  interface ActionEvents {
    repository: { created: NoFields; updated: { changes: Changes }; deleted: NoFields };
    member: {
      added: { member: ActorRef; permission: Permission };
      removed: { member: ActorRef; permission: Permission };
    };
  }
}
