import {
  CreateReviewCommentDocument,
  DeleteReviewCommentDocument,
  GetReviewCommentDocument,
  ListPullRequestReviewCommentsDocument,
  UpdateReviewCommentDocument,
} from './generated/graphql.js';
import { commentInput } from './comment-routes.js';
import { route, type RestRoute } from './route.js';
import { numberParam, PAGE_QUERY, pageParams } from './routes.js';

const COMMENT_PATH = '/repos/:id/pulls/comments/:comment_id';

/** Comments on lines of pull requests' diffs, as GitHub has them. */
export const REVIEW_COMMENT_ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: '/repos/:id/pulls/:number/comments',
    document: ListPullRequestReviewCommentsDocument,
    variables: ({ params, query }) => ({ id: params.id, number: numberParam(params.number), ...pageParams(query) }),
    resultPath: ['repository', 'pull_request', 'review_comments'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/pulls/:number/comments',
    document: CreateReviewCommentDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id, number: numberParam(params.number) } }),
    resultPath: ['create_review_comment'],
    status: 201,
    body: { input: 'input', fromPath: ['repository_id', 'number'] },
    answers: ['CONFLICT'],
  }),
  route({
    method: 'get',
    path: COMMENT_PATH,
    document: GetReviewCommentDocument,
    variables: ({ params }) => ({ id: params.id, commentId: params.comment_id }),
    resultPath: ['repository', 'review_comment'],
  }),
  route({
    method: 'patch',
    path: COMMENT_PATH,
    document: UpdateReviewCommentDocument,
    variables: commentInput,
    resultPath: ['update_review_comment'],
    body: { input: 'input', fromPath: ['repository_id', 'comment_id'] },
  }),
  route({
    method: 'delete',
    path: COMMENT_PATH,
    document: DeleteReviewCommentDocument,
    variables: (input) => ({ input: { repository_id: input.params.id, comment_id: input.params.comment_id } }),
    resultPath: ['delete_review_comment'],
    kind: 'empty',
  }),
];
