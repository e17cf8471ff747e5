import { badRequest } from './status.js';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | '!exists' };

/** A parsed label selector: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`, comma-joined. */
export type Selector = (labels: Record<string, string>) => boolean;

function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of selector) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      terms.push(current);
      current = '';
    } else current += char;
  }
  terms.push(current);
  return terms.map((term) => term.trim()).filter((term) => term !== '');
}

const KEY = /^([a-z0-9A-Z][-a-z0-9A-Z_.]*\/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$/;

function requirementOf(term: string): Requirement {
  const set = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  let requirement: Requirement;
  if (set) {
    const values = set[3]!.split(',').map((value) => value.trim());
    requirement = { key: set[1]!, op: set[2] as 'in' | 'notin', values };
  } else {
    const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (equality) {
      const op = equality[2] === '!=' ? 'notin' : 'in';
      requirement = { key: equality[1]!, op, values: [equality[3]!] };
    } else if (term.startsWith('!')) requirement = { key: term.slice(1).trim(), op: '!exists' };
    else requirement = { key: term, op: 'exists' };
  }
  if (!KEY.test(requirement.key))
    throw badRequest(`unable to parse requirement: invalid label key "${term}"`);
  return requirement;
}

function matches(requirement: Requirement, labels: Record<string, string>): boolean {
  const value = labels[requirement.key];
  switch (requirement.op) {
    case 'exists':
      return value !== undefined;
    case '!exists':
      return value === undefined;
    case 'in':
      return value !== undefined && requirement.values.includes(value);
    case 'notin':
      return value === undefined || !requirement.values.includes(value);
  }
}

/** Parses a `labelSelector` query value; an empty or missing one selects everything. Throws 400. */
export function parseLabelSelector(selector: string | null | undefined): Selector {
  const requirements = splitTerms(selector ?? '').map(requirementOf);
  return (labels) => requirements.every((requirement) => matches(requirement, labels));
}

/**
 * Parses a `fieldSelector` over the fields a resource offers (`metadata.name`, `metadata.namespace`,
 * `status.phase`), with `=`, `==` and `!=`. Throws 400 on any other field.
 */
export function parseFieldSelector(
  selector: string | null | undefined,
  supported: readonly string[],
): (fields: Record<string, string>) => boolean {
  const requirements = splitTerms(selector ?? '').map((term) => {
    const match = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(term);
    if (!match) throw badRequest(`invalid selector: '${term}'; can't understand '${term}'`);
    if (!supported.includes(match[1]!)) throw badRequest(`field label not supported: ${match[1]}`);
    return { field: match[1]!, negate: match[2] === '!=', value: match[3]! };
  });
  return (fields) => requirements.every(({ field, negate, value }) => (fields[field] === value) !== negate);
}
