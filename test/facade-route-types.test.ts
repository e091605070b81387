import {
  CreateRepositoryDocument,
  GetIssueDocument,
  ListIssuesDocument,
  ResolveRepositoryDocument,
} from '../rest-facade/generated/graphql.js';
import { route, type RestRoute } from '../rest-facade/route.js';

/**
 * Each REST route is typed by its GraphQL document: its variables by the operation's variables, its
 * result by the operation's result in the REST dialect (snake_case keys, lowercase enum values). The
 * `@ts-expect-error` lines below are routes that disagree with their operation; `npm run build`
 * compiles this file, so were the typing ever loosened, the unused expectations would fail it.
 */
test('a route that disagrees with its operation does not compile', () => {
  const misnamedVariable = route({
    method: 'get',
    path: '/repos/:owner/:repo/resolve',
    document: ResolveRepositoryDocument,
    // @ts-expect-error ResolveRepository has $owner and $name, no $nam
    variables: ({ params }) => ({ owner: params.owner, nam: params.repo }),
    resultPath: ['repository_by_name'],
  });
  const graphQLFieldName = route({
    method: 'post',
    path: '/repos',
    document: CreateRepositoryDocument,
    variables: ({ body }) => ({ input: body }),
    // @ts-expect-error the result reads create_repository, in the REST dialect
    resultPath: ['createRepository'],
  });
  const unknownField = route({
    method: 'get',
    path: '/repos/:id/issues/:number',
    document: GetIssueDocument,
    variables: ({ params }) => ({ id: params.id, number: 1 }),
    // @ts-expect-error GetIssue selects repository.issue, no repository.issues
    resultPath: ['repository', 'issues'],
  });
  const unknownVariable = route({
    method: 'get',
    path: '/repos/:id/issues',
    document: ListIssuesDocument,
    // @ts-expect-error ListIssues has $state, no $stat: a variable the operation does not declare would be dropped
    variables: ({ params, query }) => ({ id: params.id, stat: query.state }),
    resultPath: ['repository', 'issues'],
    kind: 'envelope',
  });
  // @ts-expect-error only route() makes a RestRoute, so no route skips the checks above
  const unchecked: RestRoute = {
    method: 'get',
    path: '/x',
    document: ListIssuesDocument,
    variables: () => ({}),
    resultPath: [],
    spread: null,
    result: () => null,
    query: [],
    kind: 'record',
    status: 200,
    body: null,
  };
  expect(unchecked.path).toBe('/x');
  expect(unknownVariable.kind).toBe('envelope');
  // Checked routes are all alike at run time: a record answered with 200 unless they say otherwise.
  for (const checked of [misnamedVariable, graphQLFieldName, unknownField]) expect([checked.kind, checked.status]).toEqual(['record', 200]);
});
