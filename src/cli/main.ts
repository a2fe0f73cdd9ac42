/**
 * The `tollgate` command line (bin/tollgate.mjs runs this through tsx).
 *
 *   tollgate verify <export.json|-> [--jwks <file-or-url>] [--approval-jwks <file-or-url>]
 *                  [--checkpoint <file>] [--json]
 *
 * Verifies a receipt export (GET /v1/receipts/export) offline: Ed25519 signatures against the
 * service's published keys, hash links, numbering, the export attestation, every chain's
 * events against the event hash chain its receipt committed to, every approval record against
 * its receipt and its own signature, and with --checkpoint that the exported log still extends
 * a checkpoint kept earlier (tail truncation). Without --jwks / --approval-jwks the keys
 * embedded in the export are used, which proves consistency but not origin (anyone who rewrites
 * the file can rewrite its keys); pass the service's /.well-known/tollgate/receipt-keys.json
 * and approval-keys.json for that.
 *
 * Exit codes: 0 valid, 1 invalid, 2 usage or input error (bad arguments, unreadable file, not an
 * export or checkpoint, keys that are not an Ed25519 JWKS, JWKS URL unreachable).
 *
 *   tollgate policy test <dir> [--json]          offline policy tests (policy-test.ts)
 *   tollgate policy replay <file> [--url] [--api-key] [--from] [--to] [--replace | --name]
 *                          [--max-events] [--sample] [--json]
 *                                                replay a candidate through a service (policy-replay.ts);
 *                                                exit 0 no change, 1 changes, 2 bad input or unreachable
 */
import { readFile } from "node:fs/promises";
import { Command, CommanderError } from "commander";
import { revocationsOf } from "../receipts/key-validity.js";
import { VERSION } from "../version.js";
import { formatReport } from "./format.js";
import {
  formatReplayReport,
  PolicyReplayInputError,
  type PolicyReplayOptions,
  replayPolicyFile,
} from "./policy-replay.js";
import { formatPolicyTestReport, PolicyTestInputError, runPolicyTests } from "./policy-test.js";
import { ExportInputError, importJwks, type KeysSource, parseExport, verifyExport } from "./verify-export.js";

/** Exit codes of the CLI. */
export const ExitCode = { valid: 0, invalid: 1, usage: 2 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Where output goes; injectable for tests. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin: () => Promise<string>;
  fetch: typeof fetch;
  /** Environment variables (TOLLGATE_URL, TOLLGATE_API_KEY); default process.env. */
  env?: Record<string, string | undefined>;
}

const defaultIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  },
  fetch: (...args) => fetch(...args),
};

class UsageError extends Error {}

async function readJson(what: string, text: Promise<string>): Promise<unknown> {
  let raw: string;
  try {
    raw = await text;
  } catch (err) {
    throw new UsageError(
      `cannot read ${what}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  try {
    return JSON.parse(raw);
  } catch {
    throw new UsageError(`${what} is not JSON`);
  }
}

async function loadJwks(source: string, io: Io): Promise<{ jwks: unknown; kind: KeysSource }> {
  if (/^https?:\/\//i.test(source)) {
    let res: Response;
    try {
      res = await io.fetch(source, {
        signal: AbortSignal.timeout(10_000),
        headers: { accept: "application/json" },
      });
    } catch (err) {
      throw new UsageError(`cannot fetch --jwks ${source}: ${(err as Error).message}`);
    }
    if (!res.ok) throw new UsageError(`cannot fetch --jwks ${source}: HTTP ${res.status}`);
    return { jwks: await readJson(`--jwks ${source}`, res.text()), kind: "url" };
  }
  return { jwks: await readJson(`--jwks ${source}`, readFile(source, "utf8")), kind: "file" };
}

/** Options of `tollgate verify`. */
interface VerifyOptions {
  jwks?: string;
  approvalJwks?: string;
  checkpoint?: string;
  json?: boolean;
}

async function verifyCommand(file: string, opts: VerifyOptions, io: Io): Promise<ExitCode> {
  const doc = await readJson(
    file === "-" ? "standard input" : file,
    file === "-" ? io.readStdin() : readFile(file, "utf8"),
  );
  const exp = parseExport(doc);
  const { jwks, kind } = opts.jwks
    ? await loadJwks(opts.jwks, io)
    : { jwks: exp.jwks, kind: "export" as const };
  const approval = opts.approvalJwks ? await loadJwks(opts.approvalJwks, io) : null;
  const checkpoint = opts.checkpoint
    ? await readJson(`--checkpoint ${opts.checkpoint}`, readFile(opts.checkpoint, "utf8"))
    : undefined;
  const report = verifyExport(doc, importJwks(jwks), kind, {
    revocations: revocationsOf(jwks),
    ...(approval
      ? {
          approvalKeys: importJwks(approval.jwks),
          approvalKeysSource: approval.kind,
          approvalRevocations: revocationsOf(approval.jwks),
        }
      : {}),
    ...(checkpoint !== undefined ? { checkpoint } : {}),
  });
  io.stdout(
    opts.json
      ? `${JSON.stringify(report, null, 2)}\n`
      : formatReport(report, opts.jwks ?? null, opts.approvalJwks ?? null),
  );
  return report.overall_status === "valid" ? ExitCode.valid : ExitCode.invalid;
}

/** Runs the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], io: Io = defaultIo): Promise<ExitCode> {
  let code: ExitCode = ExitCode.usage;
  const program = new Command()
    .name("tollgate")
    .description("Tollgate command line tools")
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError();
  program
    .command("verify")
    .description(
      "verify an exported receipt chain offline (signatures, hash links, numbering, events, approvals, checkpoint) without the HMAC key; exit 0 valid, 1 invalid, 2 usage error",
    )
    .argument("<export>", "export file from GET /v1/receipts/export, or - for standard input")
    .option(
      "--jwks <file-or-url>",
      "trusted receipt keys: a JWKS file or URL (e.g. <service>/.well-known/tollgate/receipt-keys.json)",
    )
    .option(
      "--approval-jwks <file-or-url>",
      "trusted approval keys: a JWKS file or URL (e.g. <service>/.well-known/tollgate/approval-keys.json)",
    )
    .option(
      "--checkpoint <file>",
      "a checkpoint kept earlier (from chain completion or GET /v1/receipts/checkpoint); fails when the exported log no longer extends it",
    )
    .option("--json", "print the report as JSON")
    .action(async (file: string, opts: VerifyOptions) => {
      code = await verifyCommand(file, opts, io);
    });
  const policy = program.command("policy").description("policy tools");
  policy
    .command("test")
    .description(
      "decide the cases of <dir>/*.tollgate-test.yaml against the GovernancePolicy resources of <dir>, offline; exit 0 all pass, 1 a case failed, 2 a bad file",
    )
    .argument("<dir>", "directory with GovernancePolicy YAML files and *.tollgate-test.yaml fixtures")
    .option("--json", "print the report as JSON")
    .action(async (dir: string, opts: { json?: boolean }) => {
      const report = await runPolicyTests(dir);
      io.stdout(opts.json ? `${JSON.stringify(report, null, 2)}\n` : formatPolicyTestReport(report));
      code = report.failed === 0 ? ExitCode.valid : ExitCode.invalid;
    });
  policy
    .command("replay")
    .description(
      "replay a candidate policy over the organization's recorded events through a running service (POST /v1/policies/replay) and summarize the changed decisions; exit 0 no change, 1 changes found, 2 bad input, service unreachable or request refused",
    )
    .argument(
      "<file>",
      "a GovernancePolicy resource (YAML or JSON) or an admin API policy body ({config: ...})",
    )
    .option("--url <url>", "the service's base URL (default: $TOLLGATE_URL)")
    .option("--api-key <key>", "an admin API key of the organization (default: $TOLLGATE_API_KEY)")
    .option("--from <instant>", "start of the window, ISO 8601 (default: 24 hours before --to)")
    .option("--to <instant>", "end of the window, ISO 8601, exclusive (default: now)")
    .option("--replace <name>", "the organization's policy the candidate replaces")
    .option("--name <name>", "the name the candidate is added under (default: replay-candidate)")
    .option("--max-events <n>", "read at most this many events (service default 100000, at most 200000)")
    .option("--sample <n>", "list at most this many changed events (default 20, at most 100)")
    .option("--json", "print the service's answer as JSON")
    .action(async (file: string, opts: PolicyReplayOptions & { json?: boolean }) => {
      const env = io.env ?? process.env;
      const answer = await replayPolicyFile(
        file,
        { ...opts, url: opts.url ?? env.TOLLGATE_URL, apiKey: opts.apiKey ?? env.TOLLGATE_API_KEY },
        io.fetch,
        Date.now(),
      );
      io.stdout(opts.json ? `${JSON.stringify(answer, null, 2)}\n` : formatReplayReport(answer));
      code = answer.changed === 0 ? ExitCode.valid : ExitCode.invalid;
    });
  try {
    if (argv.length === 0) {
      io.stderr(program.helpInformation());
      return ExitCode.usage;
    }
    await program.parseAsync(argv, { from: "user" });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      return ["commander.helpDisplayed", "commander.help", "commander.version"].includes(err.code)
        ? ExitCode.valid
        : ExitCode.usage;
    }
    if (
      err instanceof UsageError ||
      err instanceof ExportInputError ||
      err instanceof PolicyTestInputError ||
      err instanceof PolicyReplayInputError
    ) {
      io.stderr(`tollgate: ${err.message}\n`);
      return ExitCode.usage;
    }
    throw err;
  }
}
