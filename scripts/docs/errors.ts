/**
 * The error code reference: the HTTP API's codes from `ApiErrorCode` (src/contract/v1/errors.ts,
 * each code's doc comment read from the source) and the sidecar's `tollgate-error-code` values from
 * `ErrorCode` (sidecar/wire/errors.ts) with the gRPC status each maps to (`GatewayError`).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { status as GrpcStatus } from "@grpc/grpc-js";
import ts from "typescript";
import { ErrorCode, GatewayError } from "../../sidecar/wire/errors.js";
import { ApiErrorCode } from "../../src/contract/v1/errors.js";
import { code, generatedHeader, table } from "./markdown.js";

/** The doc comment of each property of the object literal `const <name> = { … }` in `file`. */
function propertyDocs(file: string, name: string): Map<string, string> {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out = new Map<string, string>();
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.name.text === name &&
      node.initializer
    ) {
      let init: ts.Expression = node.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
      if (!ts.isObjectLiteralExpression(init)) throw new Error(`${file}: ${name} is not an object literal`);
      for (const p of init.properties) {
        const docs = ts.getJSDocCommentsAndTags(p).filter(ts.isJSDoc);
        const text = docs.map((d) => ts.getTextOfJSDocComment(d.comment) ?? "").join(" ");
        if (p.name && ts.isIdentifier(p.name)) out.set(p.name.text, text.replace(/\s+/g, " ").trim());
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const grpcName = (n: number) => Object.entries(GrpcStatus).find(([, v]) => v === n)?.[0] ?? String(n);

export function errorsMarkdown(root: string): string {
  const apiDocs = propertyDocs(path.join(root, "src/contract/v1/errors.ts"), "ApiErrorCode");
  const apiRows = Object.entries(ApiErrorCode).map(([key, value]) => {
    const doc = apiDocs.get(key) ?? "";
    const m = /^(\d{3}|\dxx|4xx|5xx)\b:?\s*(.*)$/i.exec(doc);
    return [m ? m[1]! : "—", code(value), m ? m[2]! : doc];
  });
  const grpcRows = Object.values(ErrorCode).map((c) => [
    code(c),
    code(grpcName(new GatewayError(c, "").grpcCode)),
  ]);
  return `${[
    generatedHeader(
      "Error codes",
      "`ApiErrorCode` in `src/contract/v1/errors.ts` and `ErrorCode` in `sidecar/wire/errors.ts`",
    ),
    "## HTTP API",
    "",
    "Every error of the HTTP API has one body shape, and `code` is one of the codes below:",
    "",
    "```json",
    '{ "statusCode": 409, "code": "TG_ERR_CHAIN_COMPLETED", "error": "Conflict",',
    '  "message": "The chain is completed and accepts no further actions", "details": { "chain_id": "..." } }',
    "```",
    "",
    table(["status", "code", "meaning"], apiRows),
    "",
    "## Sidecar (gRPC)",
    "",
    "A refused gRPC call carries `tollgate-error-code` in its trailing metadata (and as the `reason` of the " +
      "`google.rpc.ErrorInfo` in `grpc-status-details-bin`); see [gRPC contract](grpc.md).",
    "",
    table(["tollgate-error-code", "gRPC status"], grpcRows),
    "",
  ].join("\n")}`;
}
