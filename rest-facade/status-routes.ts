import {
  CreateCommitStatusDocument,
  GetCombinedStatusDocument,
  GetCombinedStatusVersionDocument,
  ListCommitStatusesDocument,
} from './generated/graphql.js';
import { route, type RestRoute } from './route.js';
import { PAGE_QUERY, pageParams } from './routes.js';

/** Commit statuses as GitHub has them: posted on a sha, read through a sha, branch or tag. */
export const STATUS_ROUTES: RestRoute[] = [
  route({
    method: 'post',
    path: '/repos/:id/statuses/:sha',
    document: CreateCommitStatusDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id, sha: params.sha } }),
    resultPath: ['create_commit_status'],
    status: 201,
    body: { input: 'input', fromPath: ['repository_id', 'sha'] },
  }),
  route({
    method: 'get',
    path: '/repos/:id/commits/:ref/statuses',
    document: ListCommitStatusesDocument,
    variables: ({ params, query }) => ({ id: params.id, ref: params.ref, ...pageParams(query) }),
    resultPath: ['commit_statuses'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
  route({
    method: 'get',
    path: '/repos/:id/commits/:ref/status',
    document: GetCombinedStatusDocument,
    variables: ({ params }) => ({ id: params.id, ref: params.ref }),
    resultPath: ['combined_status'],
    // CI systems poll it; fifty contexts are most of a request's work to render.
    reuse: GetCombinedStatusVersionDocument,
  }),
];
