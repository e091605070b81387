/**
 * Which rule protects a branch. A rule's pattern is an exact branch name or contains `*`, which
 * stands for any characters within one path segment (`release/*` protects `release/1.0`, not
 * `release/1.0/hotfix`). An exact name beats every pattern; among patterns, the one with the most
 * characters besides `*` (the most specific) wins, then the first by name, so the choice never
 * depends on the order rules were made in.
 */
export function ruleFor<Rule extends { pattern: string }>(rules: readonly Rule[], branch: string): Rule | null {
  let best: Rule | null = null;
  for (const rule of rules) {
    if (rule.pattern === branch) return rule;
    if (!rule.pattern.includes('*') || !matches(rule.pattern, branch)) continue;
    if (!best || moreSpecific(rule.pattern, best.pattern)) best = rule;
  }
  return best;
}

function moreSpecific(a: string, b: string): boolean {
  const literal = (pattern: string) => pattern.replaceAll('*', '').length;
  return literal(a) !== literal(b) ? literal(a) > literal(b) : a < b;
}

const compiled = new Map<string, RegExp>();

function matches(pattern: string, branch: string): boolean {
  let regex = compiled.get(pattern);
  if (!regex) {
    const source = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^/]*');
    regex = new RegExp(`^${source}$`);
    if (compiled.size > 10_000) compiled.clear(); // patterns are few per repository; never a leak across many
    compiled.set(pattern, regex);
  }
  return regex.test(branch);
}

/** Why a pattern cannot name branches, or null: the rules git has for branch names, with `*` allowed. */
export function patternProblem(pattern: string): string | null {
  if (!pattern.trim()) return 'the branch name or pattern is empty';
  if (pattern.length > 255) return 'the branch name or pattern is longer than 255 characters';
  if (/[\x00-\x20\x7f~^:?[\\]/.test(pattern))
    return 'the branch name or pattern contains a space, a control character or one of ~ ^ : ? [ \\';
  if (pattern.startsWith('/') || pattern.endsWith('/') || pattern.includes('//') || pattern.includes('..') || pattern.includes('@{')) {
    return "the branch name or pattern has an empty path segment, '..' or '@{'";
  }
  if (pattern.split('/').some((segment) => segment.startsWith('.') || segment.endsWith('.lock'))) {
    return "a path segment of the branch name or pattern starts with '.' or ends with '.lock'";
  }
  return null;
}
