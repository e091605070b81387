import type { Changes } from '../../events/event-map.js';
import type { Label } from './label.entity.js';

/** A label as events (and the label endpoints) carry it. */
export function labelPayload(label: Pick<Label, 'id' | 'name' | 'color' | 'description'>) {
  return { id: label.id, name: label.name, color: label.color, description: label.description };
}

export type LabelPayload = ReturnType<typeof labelPayload>;

declare module '../../events/event-map.js' {
  interface ActionEvents {
    /** `label`: a repository's label was created, edited (with `changes`: name, color, description) or deleted. */
    label: {
      created: { label: LabelPayload };
      edited: { label: LabelPayload; changes: Changes };
      deleted: { label: LabelPayload };
    };
  }
}
