import { DeleteBranchProtectionDocument, GetBranchProtectionDocument, SetBranchProtectionDocument } from './generated/graphql.js';
import { route, type RestRoute } from './route.js';

/** `:branch` is URL-encoded: `release%2F*` names the pattern `release/*`. */
const PROTECTION = '/repos/:id/branches/:branch/protection';

/** Branch protection rules, by branch name or pattern (admin). */
export const PROTECTION_ROUTES: RestRoute[] = [
  route({
    method: 'get',
    path: PROTECTION,
    document: GetBranchProtectionDocument,
    variables: ({ params }) => ({ id: params.id, branch: params.branch }),
    resultPath: ['repository', 'branch_protection'],
    answers: ['FORBIDDEN'],
  }),
  route({
    method: 'put',
    path: PROTECTION,
    document: SetBranchProtectionDocument,
    variables: ({ params, body }) => ({ input: { ...body, repository_id: params.id, branch: params.branch } }),
    resultPath: ['set_branch_protection'],
    body: { input: 'input', fromPath: ['repository_id', 'branch'] },
  }),
  route({
    method: 'delete',
    path: PROTECTION,
    document: DeleteBranchProtectionDocument,
    variables: ({ params }) => ({ id: params.id, branch: params.branch }),
    resultPath: ['delete_branch_protection'],
    kind: 'empty',
  }),
];
