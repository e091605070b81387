import { Problems } from '../../errors/domain-error.js';

const MAX_NAME = 50;
const MAX_DESCRIPTION = 100;

/** The stored color: six lowercase hex digits, a leading # dropped; null when it is not one. */
export function colorOf(color: string): string | null {
  const digits = color.startsWith('#') ? color.slice(1) : color;
  return /^[0-9a-fA-F]{6}$/.test(digits) ? digits.toLowerCase() : null;
}

/** Every problem of a label's fields; each is checked only where given. */
export function checkLabel(fields: { name?: string | null; color?: string | null; description?: string | null }): Problems {
  const problems = new Problems();
  const { name, color, description } = fields;
  if (name !== undefined) {
    if (name === null || name.trim() === '') problems.add('name', 'missing', 'a label needs a name');
    else if (name.trim().length > MAX_NAME) problems.add('name', 'too_long', `a label name is at most ${MAX_NAME} characters`);
    // Lists filter by labels separated by commas, so a name cannot hold one.
    else if (name.includes(',')) problems.add('name', 'invalid', 'a label name cannot contain a comma');
  }
  if (color !== undefined && (color === null || colorOf(color) === null)) {
    problems.add('color', 'invalid', 'color is six hex digits, such as f29513');
  }
  if (description != null && description.length > MAX_DESCRIPTION) {
    problems.add('description', 'too_long', `a label description is at most ${MAX_DESCRIPTION} characters`);
  }
  return problems;
}
