/**
 * CEL (Common Expression Language) in custom rules: a rule's `expression` is compiled once and
 * evaluated against the action, the caller's workload identity, the chain so far, the
 * organization and the evaluation instant. The implementation is `@bufbuild/cel` (it passes
 * every vector of shared/cel-conformance: 297 core + 20 timestamp expressions; see
 * docs/policy-cel.md for the comparison). Nothing here parses CEL itself: parsing, planning and
 * evaluating are the library's; this module adds the declaration check, the bounds, positions
 * in error messages and the variables.
 *
 * Pure: no I/O, no clock reads (the evaluation instant is an argument). {@link compileExpression}
 * memoizes by expression text (a bounded map): a cache of a pure function, so results never
 * depend on it; it is what makes "compiled once per policy version" hold on the hot path.
 *
 * Variables (every name an expression may use besides its own comprehension variables)
 * ==================================================================================
 * | variable | CEL type | fields |
 * | --- | --- | --- |
 * | `action` | map | `agentName` string, `type` string, `name` string, `payload` map (the sanitized payload, any depth; JSON numbers are `double`), `destinationDomains` list of string (lowercase) |
 * | `identity` | map or `null` | `namespace`, `serviceAccount` (`"<ns>/<name>"`), `spiffeId`, `podName` (string or null), `podUid` (string or null); `null` for API-key and session callers |
 * | `chain` | map | `eventCount` int (actions before this one), `financialExposureUsd` double, `ageSeconds` double (since the chain opened), `actions` list of `{name, type, agentName}` (every action recorded before this one, in order; absent when the caller did not supply them — reading it is then an evaluation error, so the rule fails closed) |
 * | `org` | map | `environment` string (absent when the caller did not supply it — reading it is then an evaluation error) |
 * | `now` | timestamp | the evaluation instant |
 *
 * Bounds (checked when the expression is written; {@link CEL_LIMITS})
 * ==================================================================
 * at most 2,048 characters, at most 500 syntax nodes (after macro expansion), and no
 * comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) inside another one's range or
 * body, so one evaluation is linear in the size of its inputs (the payload, bounded by the
 * request body limit, and the chain's actions, bounded by runaway_limits.max_events).
 */
import { createRequire } from "node:module";
import type * as CelLibrary from "@bufbuild/cel";
import type * as Wkt from "@bufbuild/protobuf/wkt";
import type * as Re2 from "@bufbuild/re2";

/**
 * The CEL library (and its RE2 engine and protobuf timestamps), loaded on first use: a process
 * that never compiles or evaluates an expression — the sidecar, which imports the policy schema
 * through the SDK — does not carry it (~6.5 MiB of RSS, bench/memory). Loaded synchronously
 * (the schema's refinement compiles synchronously), each package's CommonJS build.
 */
let library: { cel: typeof CelLibrary; wkt: typeof Wkt; re2: typeof Re2 } | null = null;
const lib = () => {
  if (library === null) {
    const require = createRequire(import.meta.url);
    library = {
      cel: require("@bufbuild/cel") as typeof CelLibrary,
      wkt: require("@bufbuild/protobuf/wkt") as typeof Wkt,
      re2: require("@bufbuild/re2") as typeof Re2,
    };
  }
  return library;
};

/** The bounds an expression must respect to be accepted (see the module comment). */
export const CEL_LIMITS = {
  /** Characters (UTF-16 code units) of the expression text. */
  maxLength: 2048,
  /** Syntax nodes of the parsed expression, macros expanded. */
  maxNodes: 500,
  /** Comprehensions (macros that iterate) nested inside one another; 1 = no nesting. */
  maxComprehensionDepth: 1,
} as const;

/** The root variables and, for the maps, the fields an expression may select on them. */
export const CEL_VARIABLES: Readonly<Record<string, readonly string[] | null>> = {
  action: ["agentName", "type", "name", "payload", "destinationDomains"],
  identity: ["namespace", "serviceAccount", "spiffeId", "podName", "podUid"],
  chain: ["eventCount", "financialExposureUsd", "ageSeconds", "actions"],
  org: ["environment"],
  /** A timestamp: no fields. */
  now: null,
};

/** Where in the expression text a compile error is: 0-based offset, 1-based line and column. */
export interface CelPosition {
  offset: number;
  line: number;
  column: number;
}

/** Why an expression was refused; `message` already names the position (`line L, column C`). */
export interface CelCompileError {
  message: string;
  position: CelPosition | null;
}

/** A compiled expression: evaluate it with {@link evaluateExpression}. */
export interface CelProgram {
  readonly text: string;
  /** Whether the expression reads `chain.actions` (the service reads the chain's actions only then). */
  readonly usesChainActions: boolean;
  /** Whether the expression may read `action.payload` (the engine converts the payload only then). */
  readonly readsPayload: boolean;
  /** The root variables (CEL_VARIABLES) the expression reads; only these need building. */
  readonly variables: ReadonlySet<string>;
  /** The library's planned evaluation function. */
  readonly run: (bindings: Record<string, unknown>) => unknown;
}

/** The result of {@link compileExpression}. */
export type CelCompileResult = { ok: true; program: CelProgram } | { ok: false; error: CelCompileError };

/** The result of {@link evaluateExpression}: the boolean, or why there is none. */
export type CelEvaluation = { ok: true; value: boolean } | { ok: false; error: string };

/** Compiled `matches` patterns (the library compiles the pattern on every call otherwise). */
const regexes = new Map<string, Re2.RE2JS>();
/** Patterns the regex cache keeps; the oldest goes first. */
const REGEX_CACHE_CAPACITY = 1024;

/**
 * The RE2 engine the library uses for `matches`, memoized by pattern (a cache of a pure
 * function; a pattern that does not compile throws, which the library turns into an
 * evaluation error).
 */
const cachedRe2 = {
  compile(pattern: string): { test(text: string): boolean } {
    let re = regexes.get(pattern);
    if (re === undefined) {
      re = lib().re2.RE2JS.compile(pattern);
      regexes.set(pattern, re);
      if (regexes.size > REGEX_CACHE_CAPACITY) regexes.delete(regexes.keys().next().value as string);
    }
    return re;
  },
};

const celList: typeof CelLibrary.celList = (values) => lib().cel.celList(values);
const celMap: typeof CelLibrary.celMap = (map) => lib().cel.celMap(map);
const timestampFromMs = (ms: number) => lib().wkt.timestampFromMs(ms);

let env: ReturnType<typeof CelLibrary.celEnv> | null = null;
const celEnvironment = () => (env ??= lib().cel.celEnv({ re2: cachedRe2 }));

/** 0-based offset → 1-based line and column of `text`. */
export const positionOf = (text: string, offset: number): CelPosition => {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
};

const refused = (text: string, message: string, offset: number | null): CelCompileResult => {
  const position = offset === null ? null : positionOf(text, offset);
  return {
    ok: false,
    error: {
      message: position ? `${message} at line ${position.line}, column ${position.column}` : message,
      position,
    },
  };
};

/** The parts of the library's AST (cel.expr.Expr) the declaration check reads. */
interface ExprNode {
  id: bigint;
  exprKind:
    | { case: "constExpr" | undefined; value?: unknown }
    | { case: "identExpr"; value: { name: string } }
    | { case: "selectExpr"; value: { operand?: ExprNode; field: string; testOnly: boolean } }
    | { case: "callExpr"; value: { target?: ExprNode; function: string; args: ExprNode[] } }
    | { case: "listExpr"; value: { elements: ExprNode[] } }
    | {
        case: "structExpr";
        value: {
          messageName: string;
          entries: { value?: ExprNode; keyKind: { case: string; value?: unknown } }[];
        };
      }
    | {
        case: "comprehensionExpr";
        value: {
          iterVar: string;
          iterVar2?: string;
          iterRange?: ExprNode;
          accuVar: string;
          accuInit?: ExprNode;
          loopCondition?: ExprNode;
          loopStep?: ExprNode;
          result?: ExprNode;
        };
      };
}

/** Operators the parser emits as calls that the planner evaluates itself (not in the function list). */
const BUILTIN_OPERATORS: ReadonlySet<string> = new Set([
  "_&&_",
  "_||_",
  "_?_:_",
  "_[_]",
  "_[?_]",
  "@not_strictly_false",
  "not_strictly_false",
]);

/** Type denotations usable as identifiers (`type(x) == int`). */
const TYPE_NAMES: ReadonlySet<string> = new Set([
  "int",
  "uint",
  "double",
  "bool",
  "string",
  "bytes",
  "list",
  "map",
  "null_type",
  "type",
]);

class Refusal extends Error {
  constructor(
    message: string,
    readonly exprId: bigint,
  ) {
    super(message);
  }
}

/**
 * The declaration check: every identifier is a declared variable or a comprehension variable in
 * scope, a field selected directly on a declared map variable is one of its fields, every
 * function exists, message construction is refused; also counts nodes and comprehension depth.
 */
const checkDeclarations = (
  root: ExprNode,
): { usesChainActions: boolean; readsPayload: boolean; variables: Set<string> } => {
  let nodes = 0;
  const variables = new Set<string>();
  let usesChainActions = false;
  // `action` read otherwise than by selecting a field other than payload may read the payload.
  let actionReads = 0;
  let actionFieldReads = 0;
  const visit = (e: ExprNode | undefined, scope: ReadonlySet<string>, depth: number): void => {
    if (e === undefined) return;
    nodes++;
    if (nodes > CEL_LIMITS.maxNodes) {
      throw new Refusal(`expression has more than ${CEL_LIMITS.maxNodes} syntax nodes`, e.id);
    }
    const k = e.exprKind;
    switch (k.case) {
      case "identExpr": {
        const name = k.value.name;
        if (!scope.has(name) && !Object.hasOwn(CEL_VARIABLES, name) && !TYPE_NAMES.has(name)) {
          throw new Refusal(
            `undeclared reference to '${name}' (variables: ${Object.keys(CEL_VARIABLES).join(", ")})`,
            e.id,
          );
        }
        if (!scope.has(name) && Object.hasOwn(CEL_VARIABLES, name)) variables.add(name);
        if (name === "action" && !scope.has(name)) actionReads++;
        return;
      }
      case "selectExpr": {
        const operand = k.value.operand;
        if (operand?.exprKind.case === "identExpr" && !scope.has(operand.exprKind.value.name)) {
          const name = operand.exprKind.value.name;
          const fields = CEL_VARIABLES[name];
          if (fields === null) {
            throw new Refusal(`'${name}' is a timestamp and has no field '${k.value.field}'`, e.id);
          }
          if (fields !== undefined && !fields.includes(k.value.field)) {
            throw new Refusal(
              `'${name}' has no field '${k.value.field}' (fields: ${fields.join(", ")})`,
              e.id,
            );
          }
          if (name === "chain" && k.value.field === "actions") usesChainActions = true;
          if (name === "action" && k.value.field !== "payload") actionFieldReads++;
        }
        visit(operand, scope, depth);
        return;
      }
      case "callExpr": {
        const fn = k.value.function;
        if (!BUILTIN_OPERATORS.has(fn) && celEnvironment().funcs.find(fn) === undefined) {
          throw new Refusal(`undeclared reference to function '${fn}'`, e.id);
        }
        const literal = k.value.args[k.value.target === undefined ? 1 : 0]?.exprKind;
        if (fn === "matches" && literal?.case === "constExpr") {
          const constant = literal.value as { constantKind?: { case?: string; value?: unknown } } | undefined;
          if (constant?.constantKind?.case === "stringValue") {
            try {
              cachedRe2.compile(constant.constantKind.value as string);
            } catch (err) {
              throw new Refusal(`invalid regular expression: ${(err as Error).message}`, e.id);
            }
          }
        }
        visit(k.value.target, scope, depth);
        for (const arg of k.value.args) visit(arg, scope, depth);
        return;
      }
      case "listExpr":
        for (const el of k.value.elements) visit(el, scope, depth);
        return;
      case "structExpr":
        if (k.value.messageName !== "") {
          throw new Refusal(`message construction (${k.value.messageName}) is not supported`, e.id);
        }
        for (const entry of k.value.entries) {
          if (entry.keyKind.case === "mapKey") visit(entry.keyKind.value as ExprNode, scope, depth);
          visit(entry.value, scope, depth);
        }
        return;
      case "comprehensionExpr": {
        const c = k.value;
        if (depth + 1 > CEL_LIMITS.maxComprehensionDepth) {
          throw new Refusal(
            `a comprehension (all, exists, exists_one, map, filter) inside another one is not allowed`,
            e.id,
          );
        }
        visit(c.iterRange, scope, depth + 1);
        visit(c.accuInit, scope, depth);
        const inner = new Set(scope);
        inner.add(c.iterVar);
        if (c.iterVar2) inner.add(c.iterVar2);
        inner.add(c.accuVar);
        visit(c.loopCondition, inner, depth + 1);
        visit(c.loopStep, inner, depth + 1);
        visit(c.result, new Set([...scope, c.accuVar]), depth);
        return;
      }
      default:
        return;
    }
  };
  visit(root, new Set(), 0);
  return { usesChainActions, readsPayload: actionReads > actionFieldReads, variables };
};

/** `dyn(operand)`: the identity function, so the planner reads the operand as a value (see below). */
const dynOf = (operand: ExprNode): ExprNode => ({
  id: operand.id,
  exprKind: { case: "callExpr", value: { function: "dyn", args: [operand] } },
});

/**
 * Rewrites `x.f…` and `x[k]…` (x a variable) to `dyn(x).f…` / `dyn(x)[k]…` before planning.
 * Why: the library plans an identifier followed by selections as a qualified name that may be a
 * protobuf type or enum (`action.payload.path` is looked up as the name "action.payload.path",
 * then "action.payload", in the activation and the type registry, on every evaluation) before it
 * reads the variable `action` and selects. The declaration check admits only declared variables,
 * comprehension variables and type denotations as identifiers, so no such qualified name can
 * resolve: reading the variable directly gives the same value and the same errors, without the
 * look-ups (they were a fifth of an evaluation's time).
 */
const directVariableReads = (e: ExprNode | undefined): void => {
  if (e === undefined) return;
  const k = e.exprKind;
  switch (k.case) {
    case "selectExpr":
      if (k.value.operand?.exprKind.case === "identExpr") k.value.operand = dynOf(k.value.operand);
      else directVariableReads(k.value.operand);
      return;
    case "callExpr": {
      const { args, target } = k.value;
      const indexed = (k.value.function === "_[_]" || k.value.function === "_[?_]") && args[0];
      if (indexed && indexed.exprKind.case === "identExpr") args[0] = dynOf(indexed);
      directVariableReads(target);
      for (const arg of args) directVariableReads(arg);
      return;
    }
    case "listExpr":
      for (const el of k.value.elements) directVariableReads(el);
      return;
    case "structExpr":
      for (const entry of k.value.entries) {
        if (entry.keyKind.case === "mapKey") directVariableReads(entry.keyKind.value as ExprNode);
        directVariableReads(entry.value);
      }
      return;
    case "comprehensionExpr": {
      const c = k.value;
      for (const part of [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result])
        directVariableReads(part);
      return;
    }
    default:
      return;
  }
};

/** Expressions compiled so far, by text (the most recently added last). */
const compiled = new Map<string, CelCompileResult>();
/** Entries the compile cache keeps; the oldest goes first. */
const COMPILE_CACHE_CAPACITY = 4096;

const compileUncached = (text: string): CelCompileResult => {
  if (text.length > CEL_LIMITS.maxLength) {
    return refused(text, `expression is longer than ${CEL_LIMITS.maxLength} characters`, null);
  }
  if (text.trim() === "") return refused(text, "expression is empty", null);
  let parsed: ReturnType<typeof CelLibrary.parse>;
  try {
    parsed = lib().cel.parse(text);
  } catch (err) {
    const e = err as { rawMessage?: string; message?: string; location?: { start?: { offset?: number } } };
    const offset = e.location?.start?.offset;
    return refused(
      text,
      `syntax error: ${e.rawMessage ?? e.message ?? String(err)}`,
      typeof offset === "number" ? offset : null,
    );
  }
  const positions = parsed.sourceInfo?.positions ?? {};
  let usesChainActions: boolean;
  let readsPayload: boolean;
  let variables: Set<string>;
  try {
    ({ usesChainActions, readsPayload, variables } = checkDeclarations(parsed.expr as unknown as ExprNode));
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    const offset = (positions as Record<string, number>)[String(err.exprId)];
    return refused(text, err.message, typeof offset === "number" ? offset : null);
  }
  let run: CelProgram["run"];
  try {
    directVariableReads(parsed.expr as unknown as ExprNode);
    run = lib().cel.plan(celEnvironment(), parsed) as CelProgram["run"];
  } catch (err) {
    return refused(text, `cannot be planned: ${(err as Error).message}`, null);
  }
  return { ok: true, program: { text, usesChainActions, readsPayload, variables, run } };
};

/**
 * Compiles a custom rule's expression: parses it (the library's parser), checks it against the
 * declared variables and functions and the {@link CEL_LIMITS}, and plans it. Never throws: a
 * refused expression gives `{ok: false, error}` whose message names the line and column (1-based)
 * when the problem has a position. Memoized by text (bounded), so the same text compiles once.
 */
export const compileExpression = (text: string): CelCompileResult => {
  const hit = compiled.get(text);
  if (hit !== undefined) return hit;
  const result = compileUncached(text);
  compiled.set(text, result);
  if (compiled.size > COMPILE_CACHE_CAPACITY) compiled.delete(compiled.keys().next().value as string);
  return result;
};

/** The workload identity as the engine receives it (src/policy/schema.ts WorkloadIdentity). */
export interface CelIdentityInput {
  namespace: string;
  service_account: string;
  pod_name: string | null;
  pod_uid: string | null;
  spiffe_id: string;
}

/** One action recorded earlier in the chain (ChainState.actions_so_far). */
export interface CelChainAction {
  name: string;
  type: string;
  agent_name: string;
}

/** Everything the variables are built from; see the module comment for the CEL names. */
export interface CelInputs {
  action: { agent_name: string; action_type: string; action_name: string; payload: unknown };
  /** Lowercase destination domains of the action (facts.domains). */
  destinationDomains: readonly string[];
  identity: CelIdentityInput | null;
  chain: {
    event_count: number;
    financial_exposure_usd: number;
    started_at_ms: number;
    actions_so_far?: readonly CelChainAction[];
  };
  /** The organization's environment label; undefined when the caller does not supply it. */
  environment?: string | null;
  /** The evaluation instant, epoch milliseconds. */
  nowMs: number;
}

type CelReady =
  | ReturnType<typeof CelLibrary.celMap>
  | ReturnType<typeof CelLibrary.celList>
  | string
  | number
  | boolean
  | bigint
  | null;

/**
 * A JSON value converted once into the library's values (CelMap, CelList), so that the 50th
 * rule of an evaluation does not convert the payload again (the library converts plain objects
 * on every access). Own keys only: a `constructor` or `__proto__` key is an ordinary key.
 * Values that are not JSON (undefined, functions, symbols) become null.
 */
const jsonForCel = (value: unknown): CelReady => {
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
    case "bigint":
      return value;
    case "object":
      if (value === null) return null;
      if (Array.isArray(value)) return celList(value.map(jsonForCel));
      {
        const map = new Map<string, CelReady>();
        for (const key of Object.keys(value))
          map.set(key, jsonForCel((value as Record<string, unknown>)[key]));
        return celMap(map);
      }
    default:
      return null;
  }
};

/** The CEL form of action summaries already converted, by the array they came in (see below). */
const convertedActions = new WeakMap<
  readonly CelChainAction[],
  { sources: CelChainAction[]; converted: CelReady[] }
>();

/**
 * `chain.actions` in the library's form. A replay hands the engine the same array, one action
 * longer per event: the summaries converted for earlier events (checked by identity) are
 * reused, so a chain's replay converts each action once instead of once per later event.
 * Returns a copy: the caller may append to `actions` afterwards.
 */
const chainActionsForCel = (actions: readonly CelChainAction[]): CelReady[] => {
  let memo = convertedActions.get(actions);
  if (memo === undefined) {
    memo = { sources: [], converted: [] };
    convertedActions.set(actions, memo);
  }
  const { sources, converted } = memo;
  let same = 0;
  while (same < sources.length && same < actions.length && sources[same] === actions[same]) same++;
  sources.length = same;
  converted.length = same;
  for (let i = same; i < actions.length; i++) {
    const a = actions[i]!;
    sources.push(a);
    converted.push(actionSummaryForCel(a));
  }
  return converted.slice();
};

/** A summary of chain.actions in the library's form (a Map filled directly: one per action). */
const actionSummaryForCel = (a: CelChainAction): CelReady =>
  celMap(new Map<string, CelReady>().set("name", a.name).set("type", a.type).set("agentName", a.agent_name));

/**
 * The CEL variables of one evaluation (build once, pass to every rule's
 * {@link evaluateExpression}). `chain.actions` and `org.environment` are left out when not
 * supplied, so an expression that reads them fails closed instead of seeing an empty value.
 * Building them is most of an evaluation's fixed cost, so a caller that knows which variables
 * its expressions read may ask for less: `variables` (default all) names the root variables to
 * offer ({@link CelProgram.variables}), and `withPayload: false` leaves `action.payload` out
 * (converting it is the costly part; {@link CelProgram.readsPayload}). An expression reading
 * a variable left out gets an evaluation error, never another value. Each root variable is
 * built when an expression first reads it (a getter, remembered): `a && chain.actions…` whose
 * `a` is false never builds `chain`.
 */
export const celBindings = (
  inputs: CelInputs,
  { withPayload = true, variables }: { withPayload?: boolean; variables?: ReadonlySet<string> } = {},
): Record<string, unknown> =>
  new LazyBindings(inputs, withPayload, variables) as unknown as Record<string, unknown>;

/**
 * The root variables as getters (the library reads `bindings[name]`), each built on its first
 * read and remembered; undefined for a variable not offered. Maps filled with set(), not from
 * [key, value] pairs: this runs per decision.
 */
class LazyBindings {
  #action: CelReady | undefined;
  #identity: CelReady | undefined;
  #chain: CelReady | undefined;
  #org: CelReady | undefined;
  #now: unknown;
  // Private fields (#), so that no name but the five variables resolves on the object: the
  // library looks variables up by property name.
  readonly #inputs: CelInputs;
  readonly #withPayload: boolean;
  readonly #offered: ReadonlySet<string> | undefined;

  constructor(inputs: CelInputs, withPayload: boolean, offered: ReadonlySet<string> | undefined) {
    this.#inputs = inputs;
    this.#withPayload = withPayload;
    this.#offered = offered;
  }

  #offers(name: string): boolean {
    return this.#offered === undefined || this.#offered.has(name);
  }

  get action(): CelReady | undefined {
    if (this.#action === undefined && this.#offers("action")) {
      const { action, destinationDomains } = this.#inputs;
      // The declared order (a comprehension over the map's keys sees them in this order).
      const fields = new Map<string, CelReady>()
        .set("agentName", action.agent_name)
        .set("type", action.action_type)
        .set("name", action.action_name);
      if (this.#withPayload) fields.set("payload", jsonForCel(action.payload ?? {}));
      fields.set("destinationDomains", celList(destinationDomains.slice()));
      this.#action = celMap(fields);
    }
    return this.#action;
  }

  get identity(): CelReady | undefined {
    if (this.#identity === undefined && this.#offers("identity")) {
      const { identity } = this.#inputs;
      this.#identity =
        identity === null
          ? null
          : celMap(
              new Map<string, CelReady>()
                .set("namespace", identity.namespace)
                .set("serviceAccount", `${identity.namespace}/${identity.service_account}`)
                .set("spiffeId", identity.spiffe_id)
                .set("podName", identity.pod_name)
                .set("podUid", identity.pod_uid),
            );
    }
    return this.#identity;
  }

  get chain(): CelReady | undefined {
    if (this.#chain === undefined && this.#offers("chain")) {
      const { chain, nowMs } = this.#inputs;
      const fields = new Map<string, CelReady>()
        .set("eventCount", BigInt(Math.trunc(chain.event_count)))
        .set("financialExposureUsd", chain.financial_exposure_usd)
        .set("ageSeconds", (nowMs - chain.started_at_ms) / 1000);
      if (chain.actions_so_far !== undefined) {
        fields.set("actions", celList(chainActionsForCel(chain.actions_so_far)));
      }
      this.#chain = celMap(fields);
    }
    return this.#chain;
  }

  get org(): CelReady | undefined {
    if (this.#org === undefined && this.#offers("org")) {
      const fields = new Map<string, CelReady>();
      if (this.#inputs.environment != null) fields.set("environment", this.#inputs.environment);
      this.#org = celMap(fields);
    }
    return this.#org;
  }

  get now(): unknown {
    if (this.#now === undefined && this.#offers("now")) this.#now = timestampFromMs(this.#inputs.nowMs);
    return this.#now;
  }
}

/**
 * Evaluates a compiled expression against {@link celBindings}. Never throws: an evaluation
 * error (a missing field or key, no matching overload, division by zero, a non-JSON value, …)
 * and a result that is not a bool give `{ok: false, error}`; the engine fails closed on them.
 */
export const evaluateExpression = (program: CelProgram, bindings: Record<string, unknown>): CelEvaluation => {
  let value: unknown;
  try {
    value = program.run(bindings);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  if (lib().cel.isCelError(value)) return { ok: false, error: value.message };
  if (typeof value !== "boolean") {
    return { ok: false, error: `the expression gave ${describe(value)}, not a bool` };
  }
  return { ok: true, value };
};

const describe = (value: unknown): string => {
  if (value === null) return "null";
  if (typeof value === "bigint") return `int ${value}`;
  if (typeof value === "number") return `double ${value}`;
  if (typeof value === "string") return "a string";
  return "a value of another type";
};
