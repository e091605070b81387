/**
 * The commands of `cairn`, their arguments and options, and their help (`cairn help <command>`,
 * `cairn <command> --help`). A mistake on the command line is one line on stderr naming what is
 * wrong, then where the command's help is, and exit code 1; nothing is asked of the service.
 */
import { Command, Option } from 'commander';
import { SCOPES } from '../principal.js';
import { VERSION } from '../version.js';
import { createToken, createUser, revokeToken, setCommitEmail } from './accounts.js';
import type { Connection } from './api.js';
import { listDeliveries, listProtections, listTokens, listUsers } from './lists.js';
import { dateTime, jsonOption, limitOption, nonEmpty, offsetOption, repositoryArgument, type RepositoryRef } from './options.js';

interface ListFlags {
  json?: boolean;
  limit?: number;
  offset?: number;
}

/** The command's own options with the connection options, which `cairn` takes anywhere on the line. */
function options<T>(command: Command): T & Connection {
  return command.optsWithGlobals<T & Connection>();
}

function userCommands(): Command {
  const user = new Command('user').description('create and list users; set your commit email');
  user
    .command('create')
    .description('create a user (site admin)')
    .argument('<login>', "the user's login")
    // Checked in the action rather than made mandatory, so that a missing <login> is reported first.
    .option('--email <email>', "the user's email address (required)", nonEmpty)
    .option('--admin', 'make the user a site admin')
    .action(async (login: string, _flags: unknown, command: Command) => {
      const { email, admin } = options<{ email?: string; admin?: boolean }>(command);
      if (email === undefined) command.error("error: required option '--email <email>' not specified");
      await createUser(options(command), login, email, admin ?? false);
    });
  user
    .command('list')
    .description('list the users (site admin)')
    .addOption(jsonOption())
    .addOption(limitOption())
    .addOption(offsetOption())
    .action(async (_flags: unknown, command: Command) => listUsers(options<ListFlags>(command)));
  user
    .command('commit-email')
    .description("set the public email of the commits Cairn makes for the token's own user, or --clear it back to their no-reply address")
    .argument('[email]', 'the address')
    .option('--clear', 'use the no-reply address again')
    .action(async (email: string | undefined, _flags: unknown, command: Command) => {
      const { clear } = options<{ clear?: boolean }>(command);
      if (Boolean(clear) === (email !== undefined)) command.error('error: give either <email> or --clear');
      await setCommitEmail(options(command), clear ? null : email!);
    });
  return user;
}

function tokenCommands(): Command {
  const token = new Command('token').description('create, list and revoke access tokens');
  token
    .command('create')
    .description('create a token; it is printed once, alone on the last line (`tail -n 1` takes it)')
    .requiredOption('--name <name>', 'what the token is for', nonEmpty)
    .requiredOption(
      '--scopes <scope,scope>',
      `comma-separated, of: ${SCOPES.join(', ')} (repo:status: commit statuses only, for CI)`,
      nonEmpty,
    )
    .option('--login <login>', "whose token (site admin); the calling token's own user by default")
    .option(
      '--expires-at <ISO date>',
      "when it stops working (2030-01-31T12:00:00Z, or a date: its midnight UTC); by default the calling token's own expiry, if it has one",
      dateTime,
    )
    .action(async (_flags: unknown, command: Command) => {
      const { login, name, scopes, expiresAt } = options<{ login?: string; name: string; scopes: string; expiresAt?: string }>(command);
      const list = scopes
        .split(',')
        .map((scope) => scope.trim())
        .filter(Boolean);
      await createToken(options(command), { login, name, scopes: list, expiresAt });
    });
  token
    .command('list')
    .description("list a user's tokens, never their secrets: your own, or another user's with --login (site admin)")
    .option('--login <login>', 'whose tokens')
    .addOption(jsonOption())
    .addOption(limitOption())
    .addOption(offsetOption())
    .action(async (_flags: unknown, command: Command) => listTokens(options<ListFlags & { login?: string }>(command)));
  token
    .command('revoke')
    .description('revoke a token: it stops working at once')
    .argument('<token-id>', "the token's id (tok_…), as `cairn token list` shows it")
    .action(async (id: string, _flags: unknown, command: Command) => revokeToken(options(command), id));
  return token;
}

function webhookCommands(): Command {
  const webhook = new Command('webhook').description("read a webhook's deliveries");
  webhook
    .command('deliveries')
    .description("a webhook's recent deliveries, newest first")
    .addArgument(repositoryArgument())
    .argument('<webhook-id>', "the webhook's id")
    .addOption(jsonOption())
    .addOption(limitOption())
    .addOption(offsetOption())
    .action(async (repo: RepositoryRef, hook: string, _flags: unknown, command: Command) =>
      listDeliveries(options<ListFlags>(command), repo, hook),
    );
  return webhook;
}

function protectionCommands(): Command {
  const protection = new Command('protection').description("read a repository's branch rules");
  protection
    .command('list')
    .description("a repository's branch rules, by pattern (admin of the repository)")
    .addArgument(repositoryArgument())
    .addOption(jsonOption())
    .action(async (repo: RepositoryRef, _flags: unknown, command: Command) => listProtections(options<ListFlags>(command), repo));
  return protection;
}

const SITE_SETTINGS =
  'It works on the database and the repositories directly, not through the API: run it beside the service, as its user, with its settings (CAIRN_DATA_DIR or --data-dir, CAIRN_REPOSITORIES_DIR, DATABASE_URL).';

function siteCommands(): Command[] {
  const backup = new Command('backup')
    .description("copy the site's database and repositories, consistent, into a new or empty directory; while the service runs or not")
    .argument('<dir>', 'where the backup goes')
    .addHelpText('after', `\n${SITE_SETTINGS}`);
  const restore = new Command('restore')
    .description(
      "make a new site from a backup: a data dir without a database (or DATABASE_URL's empty one) and an empty repositories directory",
    )
    .argument('<dir>', 'the backup')
    .addHelpText('after', `\n${SITE_SETTINGS}`);
  for (const [command, name] of [
    [backup, 'backup'],
    [restore, 'restore'],
  ] as const) {
    command.action(async (dir: string, _flags: unknown, self: Command) => {
      // Loaded only here: it brings the database driver, the configuration and the logger.
      const { runBackupCommand } = await import('../backup/command.js');
      await runBackupCommand(name, dir, { dataDir: options(self).dataDir });
    });
  }
  return [backup, restore];
}

/** Each command's help lists the connection options too, and its mistakes end by naming that help. */
function configure(command: Command, path: string): void {
  command.configureHelp({ showGlobalOptions: true }).showHelpAfterError(`see \`${path} --help\``);
  for (const sub of command.commands) configure(sub, `${path} ${sub.name()}`);
}

export function cairnProgram(): Command {
  const program = new Command('cairn')
    .description("manage a running Cairn's users and tokens, read its webhook deliveries and branch rules; back up and restore a site")
    .version(VERSION, '-V, --version', "print Cairn's version")
    .addOption(new Option('--url <base url>', "the service's address (CAIRN_BASE_URL, or http://localhost:$PORT)"))
    .addOption(new Option('--token <token>', "the token to act with (CAIRN_TOKEN, or the data directory's admin-token file)"))
    .addOption(new Option('--data-dir <dir>', 'the data directory (CAIRN_DATA_DIR, or ./data)'))
    .addHelpText('after', '\nEvery command has its own help: `cairn help <command>` or `cairn <command> --help`.');
  for (const command of [userCommands(), tokenCommands(), webhookCommands(), protectionCommands(), ...siteCommands()]) {
    program.addCommand(command);
  }
  // Commander's own help command reads one name; this one follows the whole path (`cairn help token create`).
  program
    .helpCommand(false)
    .command('help')
    .description('the help of a command')
    .argument('[command...]', 'a command, e.g. `user` or `token create`')
    .action(async (names: string[]) => {
      const found = names.reduce<Command | undefined>((command, name) => command?.commands.find((sub) => sub.name() === name), program);
      if (found) found.help();
      // A name that is no command: the parser's own error, with its suggestion of a close one.
      await cairnProgram().parseAsync(names, { from: 'user' });
    });
  configure(program, 'cairn');
  return program;
}
