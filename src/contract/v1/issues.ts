/**
 * The one formatter of zod issues for people: `field.path: message`, one line an issue, the
 * field named the way the caller's user typed it (an environment variable, a flag, a dotted
 * option path). Used by every component's configuration and argument checks.
 */
import type { z } from "zod";

/** How issueLines names a field. */
export interface IssueNaming {
  /** Text for an issue on the value itself (empty path), e.g. "(options)". Default "(value)". */
  root?: string;
  /** Renames the first path segment, e.g. a config key to its environment variable. */
  first?: (segment: string) => string;
}

/** One `path: message` line per issue of `error`. */
export function issueLines(error: z.ZodError, naming: IssueNaming = {}): string[] {
  return error.issues.map((issue) => {
    const [first, ...rest] = issue.path.map(String);
    const where =
      first === undefined ? (naming.root ?? "(value)") : [naming.first?.(first) ?? first, ...rest].join(".");
    return `${where}: ${issue.message}`;
  });
}

/** The issues of `error` on one line, separated by "; " (for an error message). */
export const issueText = (error: z.ZodError, naming?: IssueNaming): string =>
  issueLines(error, naming).join("; ");
