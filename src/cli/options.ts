/**
 * The typed options and arguments several commands share. Each parser refuses a bad value before
 * anything is asked of the service, with a message saying what the value must be.
 */
import { Argument, InvalidArgumentError, Option } from 'commander';

/** GraphQL's Int is 32-bit: a larger page or offset would come back as a type error, not as paging. */
const MAX_INT = 2 ** 31 - 1;

function integer(what: string, least: 0 | 1): (value: string) => number {
  const kind = least === 1 ? 'a positive integer' : 'a non-negative integer';
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < least) throw new InvalidArgumentError(`${what} must be ${kind}.`);
    if (Number(value) > MAX_INT) throw new InvalidArgumentError(`${what} must be at most ${MAX_INT}.`);
    return Number(value);
  };
}

/** `--name ''` is as good as no name: refused here as the missing value it stands for. */
export function nonEmpty(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('It must not be empty.');
  return value;
}

export const limitOption = () =>
  new Option('--limit <n>', 'at most n records (the service gives at most 100)').argParser(integer('The limit', 1));

export const offsetOption = () => new Option('--offset <n>', 'skip the first n records').argParser(integer('The offset', 0));

export const jsonOption = () => new Option('--json', 'print one JSON array of the records instead of a table');

/** A repository as the REST facade names it: `owner/name` (found by name), or its id. */
export type RepositoryRef = { text: string } & ({ owner: string; name: string } | { id: string });

function repository(text: string): RepositoryRef {
  const parts = text.split('/');
  if (parts.length > 2 || parts.some((part) => part === '')) throw new InvalidArgumentError('It must be owner/name or a repository id.');
  return parts.length === 2 ? { text, owner: parts[0]!, name: parts[1]! } : { text, id: text };
}

export const repositoryArgument = () => new Argument('<repo>', 'owner/name or a repository id').argParser(repository);

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** A moment as the service takes it (ISO 8601, UTC on the wire); a bare date is its midnight UTC. */
export function dateTime(value: string): string {
  const text = /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
  if (!DATE_TIME.test(text) || Number.isNaN(Date.parse(text))) {
    throw new InvalidArgumentError('It must be an ISO 8601 date-time such as 2030-01-31T12:00:00Z, or a date such as 2030-01-31.');
  }
  return new Date(text).toISOString();
}
