/**
 * The directions between the folders of Cairn, checked by `npm run lint` and
 * by the test suite (test/architecture.test.ts). Lowest first:
 *
 *   kernel       src/{config,logger,ids,version,principal}.ts, src/errors/
 *   platform     src/concurrency/, src/db/, src/disk/, src/graphql/, src/http/, src/jobs/, src/memory/, src/ratelimit/ — name no capability
 *   capabilities auth → events → repositories → git → collaborators | conversations → issues → pulls → statuses
 *                → protection,
 *                and webhooks (→ repositories): each imports only those before it
 *   composition  src/{capabilities,context,schema,server,run}.ts, src/scripts/, src/cli.ts, src/cli/,
 *                src/backup/ (the admin tool that works on the database and the repositories directly)
 *   surfaces     rest-facade/ (the REST facade and the process entry), which src/ never imports
 *
 * A capability that needs something of a later one declares an interface and
 * is given the implementation at start-up (repositories → git storage).
 */
const KERNEL = '^src/(config|logger|ids|version|principal)\\.ts$|^src/errors/';
const PLATFORM = '^src/(concurrency|db|disk|graphql|http|jobs|memory|ratelimit)/';
const COMPOSITION = '^src/(capabilities|context|schema|server|run|cli)\\.ts$|^src/(scripts|cli|backup)/';
const CAPABILITIES = [
  'auth',
  'events',
  'repositories',
  'git',
  'collaborators',
  'conversations',
  'issues',
  'pulls',
  'statuses',
  'protection',
  'webhooks',
];

/** What each capability may import besides the kernel and the platform. */
const MAY_USE = {
  auth: [],
  events: [],
  repositories: ['auth', 'events'],
  git: ['auth', 'events', 'repositories'],
  collaborators: ['auth', 'events', 'repositories'],
  // What issues and pull requests share (comments, labels, assignees, the timeline), keyed by
  // (repository, number); it reaches the issue or pull request behind a number through ports.
  conversations: ['auth', 'events', 'repositories', 'git'],
  issues: ['auth', 'events', 'repositories', 'conversations'],
  // A merged pull request closes the issues it names.
  pulls: ['auth', 'events', 'repositories', 'git', 'conversations', 'issues'],
  // Statuses add a field to pull requests (their head's combined state) from their own folder.
  statuses: ['auth', 'events', 'repositories', 'git', 'conversations', 'pulls'],
  protection: ['auth', 'events', 'repositories', 'git', 'conversations', 'pulls', 'statuses'],
  webhooks: ['auth', 'events', 'repositories'],
};

const folder = (names) => `^src/(${names.join('|')})/`;

module.exports = {
  forbidden: [
    {
      name: 'node-http-as-commonjs',
      comment:
        "An ES import of node:http loads Node's fetch client (undici) into the service: import { http } from src/http/node-http.ts, types with `import type`.",
      severity: 'error',
      from: { path: '^(src|rest-facade)/' },
      to: { path: '^(node:)?http$', dependencyTypes: ['core'], dependencyTypesNot: ['type-only'] },
    },
    { name: 'no-circular', severity: 'error', comment: 'No import cycles, type-only ones included.', from: {}, to: { circular: true } },
    {
      name: 'core-never-imports-the-facade',
      severity: 'error',
      comment: 'The REST facade is mounted onto the core from outside (rest-facade/main.ts).',
      from: { path: '^src/' },
      to: { path: '^rest-facade/' },
    },
    {
      name: 'kernel-stands-alone',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: '^src/', pathNot: KERNEL },
    },
    {
      name: 'platform-names-no-capability',
      severity: 'error',
      comment: 'Database, GraphQL, HTTP and jobs serve every capability and know none.',
      from: { path: PLATFORM },
      to: { path: `${folder(CAPABILITIES)}|${COMPOSITION}` },
    },
    ...CAPABILITIES.map((name) => ({
      name: `${name}-imports-only-earlier-capabilities`,
      severity: 'error',
      comment: `${name} may import ${MAY_USE[name].join(', ') || 'no other capability'}, the platform and the kernel.`,
      from: { path: `^src/${name}/` },
      to: {
        path: `${folder(CAPABILITIES.filter((other) => other !== name && !MAY_USE[name].includes(other)))}|${COMPOSITION}`,
      },
    })),
    {
      name: 'no-orphans',
      severity: 'error',
      comment: 'A module nothing imports is dead (entry points and the facade aside).',
      from: { orphan: true, pathNot: ['^rest-facade/main\\.ts$', '^src/cli\\.ts$', '^src/scripts/', '\\.d\\.ts$'] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|test|node_modules)/|^rest-facade/generated/' },
  },
};
