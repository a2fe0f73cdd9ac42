/**
 * The demo's progress output: numbered steps, one line per check (✔ or ✘ with a detail), and the
 * tally the exit code follows. Colour only on a terminal without NO_COLOR.
 */

const color = process.stdout.isTTY && !process.env.NO_COLOR;

/** Wraps `s` in an ANSI SGR code when colour is on. */
export const paint = (code: number, s: string): string => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
/** Prints one line. */
export const say = (s: string): void => void process.stdout.write(`${s}\n`);
/** Prints a step's title. */
export const step = (n: number, title: string): void => say(`\n${paint(1, `${n}. ${title}`)}`);

/** Expectation bookkeeping: every check prints one line and counts failures. */
export class Checks {
  failed = 0;
  passed = 0;

  /** Records and prints one check; returns `ok`. */
  check(ok: boolean, what: string, detail = ""): boolean {
    if (ok) this.passed++;
    else this.failed++;
    say(`   ${ok ? paint(32, "✔") : paint(31, "✘")} ${what}${detail ? paint(2, `  ${detail}`) : ""}`);
    return ok;
  }

  /** Prints the closing line. */
  summary(): void {
    say(
      `\n${this.failed === 0 ? paint(32, "All steps behaved as expected") : paint(31, `${this.failed} step(s) did not behave`)} (${this.passed} checks passed).`,
    );
  }
}
