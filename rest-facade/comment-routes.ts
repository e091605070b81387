import {
  AddCommentDocument,
  DeleteCommentDocument,
  GetIssueCommentDocument,
  ListIssueCommentsDocument,
  UpdateCommentDocument,
} from './generated/graphql.js';
import { route, type RestRoute, type RouteInput } from './route.js';
import { numberParam, PAGE_QUERY, pageParams } from './routes.js';

/** A comment named by the path: its repository and id, as the mutations' input (issue and review comments alike). */
export const commentInput = (input: RouteInput) => ({
  input: { ...input.body, repository_id: input.params.id, comment_id: input.params.comment_id },
});

/** Comments on issues and pull requests, as GitHub has them: one set of endpoints under issues, a pull request being an issue. */
export const COMMENT_ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: '/repos/:id/issues/:number/comments',
    document: ListIssueCommentsDocument,
    variables: ({ params, query }) => ({ id: params.id, number: numberParam(params.number), ...pageParams(query) }),
    resultPath: ['repository', 'issue_comments'],
    query: PAGE_QUERY,
    kind: 'envelope',
  }),
  route({
    method: 'post',
    path: '/repos/:id/issues/:number/comments',
    document: AddCommentDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id, number: numberParam(params.number) } }),
    resultPath: ['add_comment'],
    status: 201,
    body: { input: 'input', fromPath: ['repository_id', 'number'] },
  }),
  route({
    method: 'get',
    path: '/repos/:id/issues/comments/:comment_id',
    document: GetIssueCommentDocument,
    variables: ({ params }) => ({ id: params.id, commentId: params.comment_id }),
    resultPath: ['repository', 'issue_comment'],
  }),
  route({
    method: 'patch',
    path: '/repos/:id/issues/comments/:comment_id',
    document: UpdateCommentDocument,
    variables: commentInput,
    resultPath: ['update_comment'],
    body: { input: 'input', fromPath: ['repository_id', 'comment_id'] },
  }),
  route({
    method: 'delete',
    path: '/repos/:id/issues/comments/:comment_id',
    document: DeleteCommentDocument,
    variables: ({ params }) => ({ input: { repository_id: params.id, comment_id: params.comment_id } }),
    resultPath: ['delete_comment'],
    kind: 'empty',
  }),
];
