import { Field, Int, ObjectType, registerEnumType } from 'type-graphql';
import { ConnectionType } from '../graphql/pagination.js';

/** What one directory listing reads of git's output at most (browse.ts). */
export const MAX_TREE_LISTING_MIB = 8;

/** GraphQL types of repository browsing: read-only views of the git data. */

@ObjectType('GitSignature', { description: 'Name, email and time of a commit author or committer, as git recorded them.' })
export class GitSignature {
  @Field()
  name!: string;

  @Field()
  email!: string;

  @Field({ description: 'ISO 8601 with the offset git recorded.' })
  date!: string;
}

@ObjectType('Commit')
export class Commit {
  @Field()
  sha!: string;

  @Field({ description: 'The full message.' })
  message!: string;

  @Field({ description: 'The first line of the message.' })
  messageHeadline!: string;

  @Field(() => GitSignature)
  author!: GitSignature;

  @Field(() => GitSignature)
  committer!: GitSignature;

  @Field(() => [String], { description: 'Parent commit shas; the first is the mainline.' })
  parents!: string[];

  @Field()
  treeSha!: string;

  /** The repository it was read from (not a GraphQL field): what other capabilities' fields of a commit look it up in. */
  repositoryId?: string;
}

@ObjectType('Branch')
export class Branch {
  @Field()
  name!: string;

  @Field({ description: 'Full ref name, `refs/heads/<name>`.' })
  ref!: string;

  @Field()
  sha!: string;

  @Field({ description: 'Whether this is the default branch.' })
  isDefault!: boolean;

  @Field(() => Commit)
  commit!: Commit;
}

@ObjectType('Tag')
export class Tag {
  @Field()
  name!: string;

  @Field({ description: 'Full ref name, `refs/tags/<name>`.' })
  ref!: string;

  @Field({ description: 'What the ref points at: the tag object of an annotated tag, else the tagged object.' })
  sha!: string;

  @Field({ description: 'Annotated (a tag object with a message) rather than lightweight.' })
  annotated!: boolean;

  @Field(() => String, { nullable: true, description: 'The message of an annotated tag.' })
  message!: string | null;

  @Field(() => Commit, { nullable: true, description: 'The commit the tag leads to; null when it tags a tree or blob.' })
  commit!: Commit | null;
}

export enum TreeEntryType {
  BLOB = 'blob',
  TREE = 'tree',
  COMMIT = 'commit',
}
registerEnumType(TreeEntryType, {
  name: 'TreeEntryType',
  valuesConfig: { COMMIT: { description: 'A submodule: a commit of another repository.' } },
});

@ObjectType('TreeEntry')
class TreeEntry {
  @Field()
  name!: string;

  @Field({ description: 'Path from the root of the repository.' })
  path!: string;

  @Field(() => TreeEntryType)
  type!: TreeEntryType;

  @Field({ description: 'Git file mode: 100644, 100755, 120000 (symlink), 040000, 160000.' })
  mode!: string;

  @Field()
  sha!: string;

  @Field(() => Int, { nullable: true, description: 'Size in bytes, for blobs.' })
  size!: number | null;
}

@ObjectType('Blob')
export class Blob {
  @Field()
  path!: string;

  @Field()
  sha!: string;

  @Field(() => Int, { description: 'Size in bytes.' })
  size!: number;

  @Field({ description: 'Whether the content looks binary (contains NUL or is not UTF-8).' })
  isBinary!: boolean;

  @Field(() => String, {
    nullable: true,
    description:
      'The content as UTF-8 text; null when binary, or larger than 1 MiB as a JSON string (a control character takes 6 bytes there).',
  })
  text!: string | null;
}

/** A directory's page: a connection of its entries, and whether the listing stopped short. */
@ObjectType('TreeEntryConnection', { description: "A page of the entries of a directory, in git's order." })
export class TreeEntryConnection extends ConnectionType(TreeEntry, 'TreeEntryPage') {
  @Field({
    description: `Whether the directory holds more entries than one listing reads (${MAX_TREE_LISTING_MIB} MiB of entries, some 100,000): only those are counted and paged.`,
  })
  truncated!: boolean;
}

export const BranchConnection = ConnectionType(Branch, 'BranchConnection');
export const TagConnection = ConnectionType(Tag, 'TagConnection');
export const CommitConnection = ConnectionType(Commit, 'CommitConnection');
