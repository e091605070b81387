import { ZERO_SHA } from '../../ids.js';
import type { RefMap } from './refs.js';

/** One `<old> <new> <ref>` line of git's post-receive hook: a ref receive-pack updated. */
export interface ReportedUpdate {
  ref: string;
  before: string;
  after: string;
}

export interface RefUpdate extends ReportedUpdate {
  /**
   * `push`: made by the push being processed (reported by git, or, when the
   * report is missing because receive-pack died after moving the ref, found
   * on disk while that push held the repository's lock).
   * `outside`: a change no push reported before this one (an interrupted
   * earlier push, or a change made on disk behind Cairn's back).
   */
  cause: 'push' | 'outside';
}

export interface RefUpdatePlan {
  updates: RefUpdate[];
  /**
   * The tips the repository had before these updates (recorded refs and the
   * old values git reported): a commit reachable from one of them is not new
   * to the repository, so it is not listed in a push event.
   */
  previousTips: Set<string>;
}

/** Parses the hook's report; anything that is not a well-formed line is ignored. */
export function parseReport(text: string): ReportedUpdate[] {
  const updates: ReportedUpdate[] = [];
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{40}) ([0-9a-f]{40}) (refs\/\S+)$/.exec(line);
    if (match) updates.push({ before: match[1]!, after: match[2]!, ref: match[3]! });
  }
  return updates;
}

/**
 * The exact ref changes to record, from three views of a repository:
 * `recorded` (what earlier events announced), `reported` (what receive-pack
 * says this push did, in its order) and `disk` (what is there now, read while
 * holding the repository's push lock, so nothing else moves it meanwhile).
 *
 * Normally recorded + reported = disk and the plan is the report. Any
 * difference is recorded too, so the events always end up describing the
 * refs on disk: a reported ref whose old value is not the recorded one
 * first gets an `outside` update to that old value, and refs on disk that
 * still differ afterwards get one more update each.
 */
export function planRefUpdates(
  recorded: RefMap,
  reported: ReportedUpdate[],
  disk: RefMap,
  unreportedCause: RefUpdate['cause'],
): RefUpdatePlan {
  const previousTips = new Set(recorded.values());
  const state: RefMap = new Map(recorded);
  const updates: RefUpdate[] = [];
  const value = (refs: RefMap, ref: string) => refs.get(ref) ?? ZERO_SHA;

  for (const line of reported) {
    const current = value(state, line.ref);
    if (current !== line.before) {
      updates.push({ ref: line.ref, before: current, after: line.before, cause: 'outside' });
    }
    if (line.before !== ZERO_SHA) previousTips.add(line.before);
    if (line.before !== line.after) updates.push({ ...line, cause: 'push' });
    setRef(state, line.ref, line.after);
  }

  const names = new Set([...state.keys(), ...disk.keys()]);
  for (const ref of [...names].sort()) {
    const expected = value(state, ref);
    const actual = value(disk, ref);
    if (expected !== actual) {
      updates.push({ ref, before: expected, after: actual, cause: unreportedCause });
    }
  }
  return { updates, previousTips };
}

function setRef(refs: RefMap, ref: string, sha: string): void {
  if (sha === ZERO_SHA) refs.delete(ref);
  else refs.set(ref, sha);
}
