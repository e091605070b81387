import { Arg, Args, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Permission } from '../auth/permissions.js';
import type { RequestContext } from '../context.js';
import { cloneUrl } from '../events/payloads.js';
import { ConnectionType, PageArgs, resolvePage } from '../graphql/pagination.js';
import { Issue } from '../issues/issue.entity.js';
import { findIssue, IssueStateFilter, listIssues } from '../issues/issue.service.js';
import { Collaborator } from './collaborator.entity.js';
import { listCollaborators, removeCollaborator, setCollaborator } from './collaborator.service.js';
import { CreateRepositoryInput, DeleteRepositoryPayload, UpdateRepositoryInput } from './repository.inputs.js';
import { Repository } from './repository.entity.js';
import {
  createRepository,
  deleteRepository,
  listRepositories,
  repositoryByName,
  repositoryFor,
  updateRepository,
} from './repository.service.js';

const RepositoryConnection = ConnectionType(Repository, 'RepositoryConnection');
const IssueConnection = ConnectionType(Issue, 'IssueConnection');

@Resolver(() => Repository)
export class RepositoryResolver {
  @Query(() => Repository, { nullable: true, description: 'NOT_FOUND when it does not exist or is not visible to you.' })
  repository(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<Repository> {
    return repositoryFor(ctx, id);
  }

  @Query(() => Repository, { nullable: true, description: 'Looks a repository up by owner login and name (case-insensitive).' })
  repositoryByName(
    @Arg('owner', () => String) owner: string,
    @Arg('name', () => String) name: string,
    @Ctx() ctx: RequestContext,
  ): Promise<Repository> {
    return repositoryByName(ctx, owner, name);
  }

  @Query(() => RepositoryConnection, { description: 'Repositories you can read, newest first.' })
  repositories(
    @Args(() => PageArgs) page: PageArgs,
    @Arg('owner', () => String, { nullable: true }) owner: string | null,
    @Ctx() ctx: RequestContext,
  ) {
    return listRepositories(ctx, resolvePage(page), owner);
  }

  @Mutation(() => Repository)
  createRepository(
    @Arg('input', () => CreateRepositoryInput) input: CreateRepositoryInput,
    @Ctx() ctx: RequestContext,
  ): Promise<Repository> {
    return createRepository(ctx, input);
  }

  @Mutation(() => Repository, { description: 'Needs admin permission on the repository.' })
  updateRepository(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateRepositoryInput) input: UpdateRepositoryInput,
    @Ctx() ctx: RequestContext,
  ): Promise<Repository> {
    return updateRepository(ctx, id, input);
  }

  @Mutation(() => DeleteRepositoryPayload, { description: 'Deletes the record and the git data. Needs admin permission.' })
  deleteRepository(@Arg('id', () => ID) id: string, @Ctx() ctx: RequestContext): Promise<DeleteRepositoryPayload> {
    return deleteRepository(ctx, id);
  }

  @Mutation(() => Collaborator, { description: 'Adds a collaborator or changes their permission. Needs admin permission.' })
  setCollaborator(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('login', () => String) login: string,
    @Arg('permission', () => Permission) permission: Permission,
    @Ctx() ctx: RequestContext,
  ): Promise<Collaborator> {
    return setCollaborator(ctx, repositoryId, login, permission);
  }

  @Mutation(() => Boolean, { description: 'Needs admin permission.' })
  removeCollaborator(
    @Arg('repositoryId', () => ID) repositoryId: string,
    @Arg('login', () => String) login: string,
    @Ctx() ctx: RequestContext,
  ): Promise<boolean> {
    return removeCollaborator(ctx, repositoryId, login);
  }

  @FieldResolver(() => String, { description: '<owner>/<name>' })
  fullName(@Root() repo: Repository): string {
    return repo.fullName;
  }

  @FieldResolver(() => String)
  cloneUrl(@Root() repo: Repository, @Ctx() ctx: RequestContext): string {
    return cloneUrl(ctx.services.config.baseUrl, repo.owner.login, repo.name);
  }

  @FieldResolver(() => IssueConnection, { description: 'Newest first.' })
  issues(
    @Root() repo: Repository,
    @Args(() => PageArgs) page: PageArgs,
    @Arg('state', () => IssueStateFilter, { defaultValue: IssueStateFilter.OPEN }) state: IssueStateFilter,
    @Ctx() ctx: RequestContext,
  ) {
    return listIssues(ctx, repo, state, resolvePage(page));
  }

  @FieldResolver(() => Issue, { nullable: true, description: 'NOT_FOUND when there is no such issue.' })
  issue(@Root() repo: Repository, @Arg('number', () => Int) number: number, @Ctx() ctx: RequestContext): Promise<Issue> {
    return findIssue(ctx, repo, number);
  }

  @FieldResolver(() => [Collaborator])
  collaborators(@Root() repo: Repository, @Ctx() ctx: RequestContext): Promise<Collaborator[]> {
    return listCollaborators(ctx, repo);
  }
}
