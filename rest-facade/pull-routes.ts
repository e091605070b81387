import {
  CreatePullRequestDocument,
  DisablePullRequestAutoMergeDocument,
  EnablePullRequestAutoMergeDocument,
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
import { FILTER_QUERY, filterParams, numberParam, PAGE_QUERY, pageParams } from './routes.js';

/** A pull request's path parameters as the operations' variables. */
const pull = ({ params }: RouteInput) => ({ id: params.id, number: numberParam(params.number) });
/** A body for a mutation on one pull request: the path names it, whatever the body says. */
const pullInput = (input: RouteInput) => ({
  input: { ...input.body, repository_id: input.params.id, number: numberParam(input.params.number) },
});
/** The body of a mutation on one pull request, less what the path names. */
const PULL_BODY = { input: 'input', fromPath: ['repository_id', 'number'] } as const;
const paged = (input: RouteInput) => ({ ...pull(input), ...pageParams(input.query) });

/** Pull requests, their merge and reviews, and (as GitHub has them) their commits and files. */
export const PULL_ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: '/repos/:id/pulls',
    document: ListPullRequestsDocument,
    variables: ({ params, query }) => ({ id: params.id, state: query.state, ...filterParams(query), ...pageParams(query) }),
    resultPath: ['repository', 'pull_requests'],
    query: [{ name: 'state', description: 'Which pull requests: open (default), closed or all.' }, ...FILTER_QUERY, ...PAGE_QUERY],
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/pulls',
    document: CreatePullRequestDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id } }),
    resultPath: ['create_pull_request'],
    status: 201,
    body: { input: 'input', fromPath: ['repository_id'] },
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number',
    document: GetPullRequestDocument,
    variables: pull,
    resultPath: ['repository', 'pull_request'],
  }),
  route({
    method: 'patch',
    path: '/repos/:id/pulls/:number',
    document: UpdatePullRequestDocument,
    variables: pullInput,
    resultPath: ['update_pull_request'],
    body: PULL_BODY,
    answers: ['CONFLICT'],
  }),
  route({
    method: 'put',
    path: '/repos/:id/pulls/:number/merge',
    document: MergePullRequestDocument,
    variables: pullInput,
    resultPath: ['merge_pull_request'],
    body: PULL_BODY,
    answers: ['CONFLICT', 'NOT_MERGEABLE'],
  }),
  route({
    method: 'put',
    path: '/repos/:id/pulls/:number/auto_merge',
    document: EnablePullRequestAutoMergeDocument,
    variables: pullInput,
    resultPath: ['enable_pull_request_auto_merge'],
    body: PULL_BODY,
  }),
  route({
    method: 'delete',
    path: '/repos/:id/pulls/:number/auto_merge',
    document: DisablePullRequestAutoMergeDocument,
    variables: (input) => ({ input: { repository_id: input.params.id, number: numberParam(input.params.number) } }),
    resultPath: ['disable_pull_request_auto_merge'],
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/reviews',
    document: ListPullRequestReviewsDocument,
    variables: paged,
    resultPath: ['repository', 'pull_request', 'reviews'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/pulls/:number/reviews',
    document: SubmitReviewDocument,
    variables: pullInput,
    resultPath: ['submit_review'],
    status: 201,
    body: PULL_BODY,
    answers: ['CONFLICT'],
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/commits',
    document: ListPullRequestCommitsDocument,
    variables: paged,
    resultPath: ['repository', 'pull_request', 'commits'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/files',
    document: ListPullRequestFilesDocument,
    variables: paged,
    resultPath: ['repository', 'pull_request', 'files'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
];
