import type { Problems } from '../errors/domain-error.js';

/** Repository names: 1-100 of [A-Za-z0-9._-], not `.` or `..`, not ending in `.git`. */
export function checkRepositoryName(name: string, problems: Problems, field = 'name'): void {
  if (name.length < 1 || name.length > 100) {
    problems.add(field, 'invalid_length', 'name must be 1 to 100 characters');
  } else if (!/^[A-Za-z0-9._-]+$/.test(name)) {
    problems.add(field, 'invalid_format', 'name may contain only letters, digits, ".", "_" and "-"');
  } else if (name === '.' || name === '..') {
    problems.add(field, 'invalid_format', 'name cannot be "." or ".."');
  } else if (/\.git$/i.test(name)) {
    problems.add(field, 'invalid_format', 'name cannot end in ".git"');
  }
}

/**
 * Branch names, following `git check-ref-format --branch`: no control
 * characters, spaces or `~^:?*[\`, no `..`, `@{` or `//`, no component that
 * starts with `.` or ends with `.lock`, not `@` or `HEAD`, not starting with
 * `-` or ending with `/` or `.`; each component at most 200 bytes.
 */
const MAX_REF_COMPONENT_BYTES = 200;

export function isValidBranchName(name: string): boolean {
  if (name.length < 1 || name.length > 255 || name === '@' || name === 'HEAD' || name.startsWith('-')) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name) || name.includes('..') || name.includes('@{') || name.includes('//')) return false;
  if (name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  // Each component becomes a file name (plus `.lock` while git updates it): keep it within the 255-byte limit.
  return name
    .split('/')
    .every((part) => !part.startsWith('.') && !part.endsWith('.lock') && Buffer.byteLength(part) <= MAX_REF_COMPONENT_BYTES);
}

export function checkBranchName(name: string, problems: Problems, field = 'defaultBranch'): void {
  if (!isValidBranchName(name)) problems.add(field, 'invalid_format', `"${name.slice(0, 100)}" is not a valid branch name`);
}

const MAX_TITLE = 256;
const MAX_BODY = 65_536;

/** Title (when given: non-empty, at most 256) and body (at most 64 Ki characters) of an issue or pull request. */
export function checkTitleAndBody(problems: Problems, title: string | null | undefined, body: string | null | undefined): void {
  if (title !== undefined) {
    if (title === null || title.trim() === '') problems.add('title', 'missing', 'title cannot be empty');
    else if (title.length > MAX_TITLE) problems.add('title', 'too_long', `title is at most ${MAX_TITLE} characters`);
  }
  if (body && body.length > MAX_BODY) problems.add('body', 'too_long', `body is at most ${MAX_BODY} characters`);
}

/**
 * Applies a checked title (trimmed) and body to an issue or pull request, noting each value it
 * replaces in `changes` as `{from}` (the `changes` of an `updated` event).
 */
export function applyTitleAndBody(
  record: { title: string; body: string | null },
  input: { title?: string | null; body?: string | null },
  changes: Record<string, unknown>,
): void {
  if (input.title != null && input.title.trim() !== record.title) {
    changes.title = { from: record.title };
    record.title = input.title.trim();
  }
  if (input.body !== undefined && input.body !== record.body) {
    changes.body = { from: record.body };
    record.body = input.body;
  }
}

export function checkDescription(description: string | null | undefined, problems: Problems): void {
  if (description && description.length > 1000) problems.add('description', 'too_long', 'description is at most 1000 characters');
}
