/**
 * A backup or restore refused before it changed anything: a target that is not empty, a directory
 * that is not a backup, a backup from a newer Cairn. The command prints the message and exits 1.
 */
export class Refusal extends Error {
  override name = 'Refusal';
}
