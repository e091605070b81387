#!/usr/bin/env node
/**
 * `cairn …`: manage users and tokens of a running Cairn, and read its webhook deliveries and branch
 * rules, through its GraphQL API. The token comes from --token, CAIRN_TOKEN, or the data directory's
 * admin-token file; the address from --url, CAIRN_BASE_URL or http://localhost:$PORT. A created
 * token is printed on the last line of stdout, so scripts can take it with `tail -n 1`.
 *
 * `backup` and `restore` are an administrator's tools instead: they work on the database and the
 * repositories directly (src/backup/), configured as the service is, and are loaded only when asked
 * for, so the other commands (and `cairn help`) start fast. The commands are in src/cli/program.ts.
 */
import { cairnProgram } from './cli/program.js';

await cairnProgram().parseAsync();
