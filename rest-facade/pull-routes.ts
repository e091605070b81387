import {
  CreatePullRequestDocument,
  GetPullRequestDocument,
  ListPullRequestCommitsDocument,
  ListPullRequestFilesDocument,
  ListPullRequestReviewsDocument,
  ListPullRequestsDocument,
  MergePullRequestDocument,
  SubmitReviewDocument,
  UpdatePullRequestDocument,
} from './generated/graphql.js';
import { route, type RestRoute, type RouteInput } from './route.js';
import { numberParam, pageParams } from './routes.js';

/** A pull request's path parameters as the operations' variables. */
const pull = ({ params }: RouteInput) => ({ id: params.id, number: numberParam(params.number) });
/** A body for a mutation on one pull request: the path names it, whatever the body says. */
const pullInput = (input: RouteInput) => ({
  input: { ...input.body, repository_id: input.params.id, number: numberParam(input.params.number) },
});
const paged = (input: RouteInput) => ({ ...pull(input), ...pageParams(input.query) });

/** Pull requests, their merge and reviews, and (as GitHub has them) their commits and files. */
export const PULL_ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: '/repos/:id/pulls',
    document: ListPullRequestsDocument,
    variables: ({ params, query }) => ({ id: params.id, state: query.state, ...pageParams(query) }),
    result: (data) => data.repository?.pull_requests,
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/pulls',
    document: CreatePullRequestDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id } }),
    result: (data) => data.create_pull_request,
    status: 201,
    body: true,
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number',
    document: GetPullRequestDocument,
    variables: pull,
    result: (data) => data.repository?.pull_request,
  }),
  route({
    method: 'patch',
    path: '/repos/:id/pulls/:number',
    document: UpdatePullRequestDocument,
    variables: pullInput,
    result: (data) => data.update_pull_request,
    body: true,
  }),
  route({
    method: 'put',
    path: '/repos/:id/pulls/:number/merge',
    document: MergePullRequestDocument,
    variables: pullInput,
    result: (data) => data.merge_pull_request,
    body: true,
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/reviews',
    document: ListPullRequestReviewsDocument,
    variables: paged,
    result: (data) => data.repository?.pull_request?.reviews,
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/pulls/:number/reviews',
    document: SubmitReviewDocument,
    variables: pullInput,
    result: (data) => data.submit_review,
    status: 201,
    body: true,
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/commits',
    document: ListPullRequestCommitsDocument,
    variables: paged,
    result: (data) => data.repository?.pull_request?.commits,
    kind: 'envelope',
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/files',
    document: ListPullRequestFilesDocument,
    variables: paged,
    result: (data) => data.repository?.pull_request?.files,
    kind: 'envelope',
  }),
];
