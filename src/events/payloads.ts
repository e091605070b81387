/** `{id, login}`: how a user appears inside every record and payload. */
export interface ActorRef {
  id: string;
  login: string;
}

export function actorRef(user: { id: string; login: string }): ActorRef {
  return { id: user.id, login: user.login };
}

export function cloneUrl(baseUrl: string, ownerLogin: string, name: string): string {
  return `${baseUrl}/${ownerLogin}/${name}.git`;
}

/** What events need to know of the repository a change happened in (the repositories capability's entity has it). */
export interface EventRepository {
  id: string;
  name: string;
  private: boolean;
  defaultBranch: string;
  owner: ActorRef;
}

/** The `repository` object of every payload. */
export function repositoryRef(repo: EventRepository, baseUrl: string) {
  return {
    id: repo.id,
    name: repo.name,
    full_name: `${repo.owner.login}/${repo.name}`,
    owner: actorRef(repo.owner),
    private: repo.private,
    default_branch: repo.defaultBranch,
    clone_url: cloneUrl(baseUrl, repo.owner.login, repo.name),
  };
}

/** ISO 8601 UTC, or null. */
export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);
