import {
  CreateIssueDocument,
  CreateRepositoryDocument,
  DeleteRepositoryDocument,
  GetIssueDocument,
  GetRepositoryDocument,
  ListCollaboratorsDocument,
  ListIssuesDocument,
  ListRepositoriesDocument,
  RemoveCollaboratorDocument,
  ResolveRepositoryDocument,
  SetCollaboratorDocument,
  UpdateIssueDocument,
  UpdateRepositoryDocument,
} from './generated/graphql.js';
import { DomainError } from '../src/errors/domain-error.js';
import { route, type FromClient, type QueryParam, type RestRoute } from './route.js';

/** `limit`/`offset` query parameters as integers; range rules (negative, clamping) are the service's. */
export function pageParams(query: Record<string, FromClient | undefined>): { limit?: number; offset?: number } {
  const parse = (name: 'limit' | 'offset'): number | undefined => {
    const raw: unknown = query[name];
    if (raw === undefined) return undefined;
    if (typeof raw !== 'string' || !/^-?\d+$/.test(raw)) {
      throw new DomainError('INVALID_PAGINATION', `${name} must be a non-negative integer`);
    }
    // Within GraphQL's Int; the service's resolvePage judges the value (a negative one is refused there).
    const value = Math.max(Number(raw), -(2 ** 31));
    if (name === 'offset' && value > 2 ** 31 - 1) throw new DomainError('INVALID_PAGINATION', 'offset is too large');
    return Math.min(value, 2 ** 31 - 1); // limit: any larger value is clamped by the service anyway
  };
  return { limit: parse('limit'), offset: parse('offset') };
}

/** Pull request and issue numbers: a positive integer, else the resource cannot exist (404, saying why). */
export function numberParam(raw: string | undefined): number {
  if (!raw || !/^\d{1,9}$/.test(raw) || Number(raw) < 1) {
    const shown = JSON.stringify((raw ?? '').slice(0, 40));
    throw new DomainError('NOT_FOUND', `${shown} is not an issue or pull request number: they are whole numbers from 1`);
  }
  return Number(raw);
}

/** The paging query parameters of every list; `pageParams` reads them. */
export const PAGE_QUERY: readonly QueryParam[] = [
  { name: 'limit', description: 'How many items a page holds at most (the service clamps it).' },
  { name: 'offset', description: 'How many items to skip.' },
];

/** The filters and order of the lists of issues and pull requests, as the operations' variables. */
export function filterParams(query: Record<string, FromClient | undefined>) {
  const labels: unknown = query.labels;
  return {
    // `labels=a,b` as it came, as a list of one: the service splits it; anything else goes to GraphQL to judge.
    labels: typeof labels === 'string' ? [labels] : query.labels,
    assignee: query.assignee,
    creator: query.creator,
    sort: query.sort,
    direction: query.direction,
  };
}

/** The filter query parameters of the lists of issues and pull requests; `filterParams` reads them. */
export const FILTER_QUERY: readonly QueryParam[] = [
  { name: 'labels', description: 'Label names separated by commas: only those having all of them.' },
  { name: 'assignee', description: 'A login: only those assigned to them; none: only those assigned to nobody.' },
  { name: 'creator', description: 'A login: only those they opened.' },
  { name: 'sort', description: 'created (default) or updated.' },
  { name: 'direction', description: 'desc (default) or asc; ties are ordered by id.' },
];

export const ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: '/repos',
    document: ListRepositoriesDocument,
    variables: ({ query }) => ({ owner: query.owner, ...pageParams(query) }),
    resultPath: ['repositories'],
    query: [{ name: 'owner', description: 'Only the repositories of this login.' }, ...PAGE_QUERY],
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos',
    document: CreateRepositoryDocument,
    variables: ({ body }) => ({ input: body }),
    resultPath: ['create_repository'],
    status: 201,
    body: { input: 'input' },
    answers: ['CONFLICT'],
  }),
  route({
    method: 'get',
    path: '/repos/:owner/:repo/resolve',
    document: ResolveRepositoryDocument,
    variables: ({ params }) => ({ owner: params.owner, name: params.repo }),
    resultPath: ['repository_by_name'],
  }),
  route({
    method: 'get',
    path: '/repos/:id',
    document: GetRepositoryDocument,
    variables: ({ params }) => ({ id: params.id }),
    resultPath: ['repository'],
  }),
  route({
    method: 'patch',
    path: '/repos/:id',
    document: UpdateRepositoryDocument,
    variables: ({ params, body }) => ({ id: params.id, input: body }),
    resultPath: ['update_repository'],
    body: { input: 'input' },
    answers: ['CONFLICT'],
  }),
  route({
    method: 'delete',
    path: '/repos/:id',
    document: DeleteRepositoryDocument,
    variables: ({ params }) => ({ id: params.id }),
    resultPath: ['delete_repository'],
    answers: ['CONFLICT'],
  }),
  route({
    method: 'get',
    path: '/repos/:id/issues',
    document: ListIssuesDocument,
    variables: ({ params, query }) => ({ id: params.id, state: query.state, ...filterParams(query), ...pageParams(query) }),
    resultPath: ['repository', 'issues'],
    query: [{ name: 'state', description: 'Which issues: open (default), closed or all.' }, ...FILTER_QUERY, ...PAGE_QUERY],
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/issues',
    document: CreateIssueDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id } }),
    resultPath: ['create_issue'],
    status: 201,
    body: { input: 'input', fromPath: ['repository_id'] },
  }),
  route({
    method: 'get',
    path: '/repos/:id/issues/:number',
    document: GetIssueDocument,
    variables: ({ params }) => ({ id: params.id, number: numberParam(params.number) }),
    resultPath: ['repository', 'issue'],
  }),
  route({
    method: 'patch',
    path: '/repos/:id/issues/:number',
    document: UpdateIssueDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id, number: numberParam(params.number) } }),
    resultPath: ['update_issue'],
    body: { input: 'input', fromPath: ['repository_id', 'number'] },
  }),
  route({
    method: 'get',
    path: '/repos/:id/collaborators',
    document: ListCollaboratorsDocument,
    variables: ({ params }) => ({ id: params.id }),
    resultPath: ['repository', 'collaborators'],
    kind: 'array',
    answers: ['FORBIDDEN'],
  }),
  route({
    method: 'put',
    path: '/repos/:id/collaborators/:username',
    document: SetCollaboratorDocument,
    variables: ({ params, body }) => ({ id: params.id, login: params.username, permission: body.permission }),
    resultPath: ['set_collaborator'],
    body: { variables: ['permission'] },
  }),
  route({
    method: 'delete',
    path: '/repos/:id/collaborators/:username',
    document: RemoveCollaboratorDocument,
    variables: ({ params }) => ({ id: params.id, login: params.username }),
    resultPath: ['remove_collaborator'],
    kind: 'empty',
  }),
];
