/**
 * Starting the demo's agent in the chosen language and reading its report (protocol.ts): the
 * TypeScript agent runs as `node --import tsx src/demo/agent.ts`, the Python agent as
 * `<python> src/demo/agent.py` with the interpreter of `scripts/python-env.sh` (the project's
 * virtualenv, which has grpcio and grpcio-tools).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { type CallId, type CallReport, type ReportLine, ReportLineSchema, SCRIPT_CALLS } from "./protocol.js";
import { DemoError, type DemoProcess, ROOT, type Supervisor } from "./stack.js";

/** The languages the scripted agent is written in. */
export const AGENT_LANGUAGES = ["ts", "python"] as const;
export type AgentLanguage = (typeof AGENT_LANGUAGES)[number];

/**
 * Runs `bash scripts/python-env.sh` (creates the virtualenv the first time, which takes
 * minutes) and resolves with the interpreter it prints as its last stdout line.
 */
export function pythonInterpreter(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(ROOT, "scripts/python-env.sh")], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => {
      err += d;
      process.stderr.write(d); // progress of a first-time install
    });
    child.once("error", (e) => reject(new DemoError(`--agent python: cannot run bash: ${e.message}`)));
    child.once("exit", (code) => {
      const python = out.trim().split("\n").pop()?.trim();
      if (code === 0 && python) resolve(python);
      else
        reject(
          new DemoError(
            `--agent python needs Python 3.10+ and its virtualenv: scripts/python-env.sh exited ${code}: ${err.trim().split("\n").pop()}`,
          ),
        );
    });
  });
}

/** The agent's process and its report, line by line. */
export class AgentRun {
  private readonly lines: AsyncIterator<string>;
  private index = 0;

  private constructor(readonly proc: DemoProcess) {
    this.lines = createInterface({ input: proc.child.stdout! })[Symbol.asyncIterator]();
  }

  /**
   * Starts the agent of `language` against the sidecar's gRPC `address`; `python` is the
   * interpreter for the Python agent.
   */
  static start(
    supervisor: Supervisor,
    language: AgentLanguage,
    opts: { address: string; workspace: string; python?: string },
  ): AgentRun {
    const args = ["--sidecar", opts.address, "--workspace", opts.workspace];
    const proc =
      language === "ts"
        ? supervisor.start(
            "agent (TypeScript)",
            process.execPath,
            ["--import", "tsx", "src/demo/agent.ts", ...args],
            {
              pipeStdout: true,
            },
          )
        : supervisor.start("agent (Python)", opts.python ?? "python3", ["-u", "src/demo/agent.py", ...args], {
            pipeStdout: true,
            env: { PYTHONUNBUFFERED: "1" },
          });
    return new AgentRun(proc);
  }

  /** The next report line; throws with the agent's stderr when it ended or wrote something else. */
  async next(): Promise<ReportLine> {
    const { value, done } = await this.lines.next();
    if (done) {
      const code = await this.proc.exited;
      throw new DemoError(
        `${this.proc.name} exited (${code}) before its report was complete:\n${this.proc.output()}`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new DemoError(`${this.proc.name} wrote a line that is not JSON: ${value}`);
    }
    const line = ReportLineSchema.safeParse(parsed);
    if (!line.success)
      throw new DemoError(`${this.proc.name} wrote an unexpected line (${line.error.message}): ${value}`);
    return line.data;
  }

  /** The next line, which must be of `type`. */
  async expect<T extends ReportLine["type"]>(type: T): Promise<Extract<ReportLine, { type: T }>> {
    const line = await this.next();
    if (line.type !== type)
      throw new DemoError(`${this.proc.name} reported "${line.type}" where "${type}" was due`);
    return line as Extract<ReportLine, { type: T }>;
  }

  /** The report of the script's next call, which must be `id` (calls come in SCRIPT_CALLS order). */
  async call(id: CallId): Promise<CallReport> {
    const due = SCRIPT_CALLS[this.index++];
    if (due !== id)
      throw new DemoError(`the demo expected call "${id}" but the script's next call is "${due}"`);
    const line = await this.next();
    if ((line.type !== "invoked" && line.type !== "refused") || line.id !== id)
      throw new DemoError(
        `${this.proc.name} reported ${JSON.stringify(line).slice(0, 200)} where call "${id}" was due`,
      );
    return line;
  }

  /** Waits for the agent to exit; throws unless it exited 0. */
  async finished(): Promise<void> {
    const code = await this.proc.exited;
    if (code !== 0) throw new DemoError(`${this.proc.name} exited with code ${code}:\n${this.proc.output()}`);
  }
}
