/**
 * gRPC server reflection that grpcurl and other reflection clients can use by itself.
 *
 * @grpc/proto-loader merges the files of one package into one descriptor named after the
 * package (`tollgate_v1.proto`, `google_protobuf.proto`) and drops every `dependency`, so a
 * client that follows imports cannot resolve `.google.protobuf.Struct` (grpc/grpc-node#3034).
 * Before @grpc/reflection sees them, the descriptors are rewritten here: each file gets its
 * canonical path (`tollgate/v1/gateway.proto`, `grpc/health/v1/health.proto`), the merged
 * well-known types are split back into their own files (`google/protobuf/struct.proto`, ...),
 * and every file lists the files its fields and methods refer to. The health service
 * (grpc.health.v1.Health) and the reflection service itself are reflected too, as a Go or C++
 * server does, and so are google/rpc/status.proto and google/rpc/error_details.proto, so that a
 * client decodes the ErrorInfo and BadRequest of `grpc-status-details-bin` (wire/status-details.ts).
 */
import { createRequire } from "node:module";
import path from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import descriptor from "protobufjs/ext/descriptor/index.js";
import { GATEWAY_PROTO, LOADER_OPTIONS, loadGateway } from "../../wire/proto.js";

type FileProto = descriptor.IFileDescriptorProto;

/** Canonical file of each package we serve (proto-loader forgets the real names). */
const PACKAGE_FILES: Record<string, string> = {
  "tollgate.v1": GATEWAY_PROTO,
  "grpc.health.v1": "grpc/health/v1/health.proto",
  "grpc.reflection.v1": "grpc/reflection/v1/reflection.proto",
  // Every google.rpc type but Status (RPC_STATUS_FILE) is in error_details.proto.
  "google.rpc": "google/rpc/error_details.proto",
};
const RPC_STATUS_FILE = "google/rpc/status.proto";

/** The file of each well-known type, as protoc and every reflection client name them. */
const WELL_KNOWN_FILES: Record<string, string> = {
  Struct: "google/protobuf/struct.proto",
  Value: "google/protobuf/struct.proto",
  ListValue: "google/protobuf/struct.proto",
  NullValue: "google/protobuf/struct.proto",
  Any: "google/protobuf/any.proto",
  Timestamp: "google/protobuf/timestamp.proto",
  Duration: "google/protobuf/duration.proto",
  Empty: "google/protobuf/empty.proto",
  FieldMask: "google/protobuf/field_mask.proto",
  DoubleValue: "google/protobuf/wrappers.proto",
  FloatValue: "google/protobuf/wrappers.proto",
  Int64Value: "google/protobuf/wrappers.proto",
  UInt64Value: "google/protobuf/wrappers.proto",
  Int32Value: "google/protobuf/wrappers.proto",
  UInt32Value: "google/protobuf/wrappers.proto",
  BoolValue: "google/protobuf/wrappers.proto",
  StringValue: "google/protobuf/wrappers.proto",
  BytesValue: "google/protobuf/wrappers.proto",
};

/** A .proto file shipped inside an installed package. */
const packagedProto = (pkg: string, file: string): string =>
  path.join(path.dirname(createRequire(import.meta.url).resolve(`${pkg}/package.json`)), file);

/** Splits and renames proto-loader's per-package files into canonical ones (no dependencies yet). */
function canonicalFiles(merged: FileProto[]): Map<string, FileProto> {
  const files = new Map<string, FileProto>();
  const fileFor = (name: string, pkg: string, syntax: string | null | undefined): FileProto => {
    let f = files.get(name);
    if (!f) {
      f = {
        name,
        package: pkg,
        syntax: syntax ?? "proto3",
        messageType: [],
        enumType: [],
        service: [],
        dependency: [],
      };
      files.set(name, f);
    }
    return f;
  };
  for (const file of merged) {
    const pkg = file.package ?? "";
    const place = (typeName: string) =>
      pkg === "google.protobuf"
        ? (WELL_KNOWN_FILES[typeName] ?? "google/protobuf/other.proto")
        : pkg === "google.rpc" && typeName === "Status"
          ? RPC_STATUS_FILE
          : (PACKAGE_FILES[pkg] ?? `${pkg.replace(/\./g, "/")}.proto`);
    // Several definitions carry the same well-known types: each is placed once.
    const add = <T extends { name?: string | null }>(list: T[], item: T) => {
      if (!list.some((x) => x.name === item.name)) list.push(item);
    };
    for (const m of file.messageType ?? [])
      add(fileFor(place(m.name ?? ""), pkg, file.syntax).messageType!, m);
    for (const e of file.enumType ?? []) add(fileFor(place(e.name ?? ""), pkg, file.syntax).enumType!, e);
    for (const s of file.service ?? []) add(fileFor(place(s.name ?? ""), pkg, file.syntax).service!, s);
  }
  return files;
}

const camel = (name: string) => name.replace(/(?:^|_)([a-z])/g, (_m, c: string) => c.toUpperCase());
const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Repairs what protobufjs's descriptors get wrong for reflection clients: map entry types are
 * named after the field ("Fields") where protoc and Go require "<Field>Entry"; well-known types
 * carry protobufjs's camelCase field names ("nullValue") where the real files use snake_case.
 */
function repairMessage(m: descriptor.IDescriptorProto, wellKnown: boolean): void {
  for (const nested of m.nestedType ?? []) {
    if (!nested.options?.mapEntry) continue;
    const field = (m.field ?? []).find((f) => f.typeName === nested.name);
    if (!field?.name) continue;
    nested.name = `${camel(field.name)}Entry`;
    field.typeName = nested.name;
  }
  if (wellKnown) for (const f of m.field ?? []) if (f.name) f.name = snake(f.name);
  for (const nested of m.nestedType ?? []) repairMessage(nested, wellKnown);
}

/**
 * Makes every type reference fully qualified (".pkg.Type", resolved in the reference's scope as
 * protoc does) and sets each file's `dependency` to the files defining the types its fields and
 * methods use.
 */
function linkDependencies(files: Map<string, FileProto>): void {
  const owner = new Map<string, string>(); // "pkg.Type" (nested too) → file name
  const index = (scope: string, file: string, m: descriptor.IDescriptorProto) => {
    const fqn = scope ? `${scope}.${m.name}` : `${m.name}`;
    owner.set(fqn, file);
    for (const e of m.enumType ?? []) owner.set(`${fqn}.${e.name}`, file);
    for (const n of m.nestedType ?? []) index(fqn, file, n);
  };
  for (const [name, f] of files) {
    for (const m of f.messageType ?? []) index(f.package ?? "", name, m);
    for (const e of f.enumType ?? []) owner.set(f.package ? `${f.package}.${e.name}` : `${e.name}`, name);
  }
  /** ".fqn" of `ref` seen from `scope` (innermost scope first), or null when unknown. */
  const resolve = (ref: string, scope: string): string | null => {
    if (ref.startsWith(".")) return owner.has(ref.slice(1)) ? ref : null;
    for (let s = scope; ; s = s.includes(".") ? s.slice(0, s.lastIndexOf(".")) : "") {
      const candidate = s ? `${s}.${ref}` : ref;
      if (owner.has(candidate)) return `.${candidate}`;
      if (!s) return null;
    }
  };
  for (const [name, f] of files) {
    const deps = new Set<string>();
    const use = (ref: string | null | undefined, scope: string): string | undefined => {
      if (!ref) return undefined;
      const fqn = resolve(ref, scope);
      if (!fqn) throw new Error(`reflection: cannot resolve type ${ref} in ${scope || name}`);
      const dep = owner.get(fqn.slice(1))!;
      if (dep !== name) deps.add(dep);
      return fqn;
    };
    const walk = (m: descriptor.IDescriptorProto, scope: string) => {
      const inner = scope ? `${scope}.${m.name}` : `${m.name}`;
      for (const field of m.field ?? []) field.typeName = use(field.typeName, inner);
      for (const n of m.nestedType ?? []) walk(n, inner);
    };
    for (const m of f.messageType ?? []) walk(m, f.package ?? "");
    for (const s of f.service ?? []) {
      for (const method of s.method ?? []) {
        method.inputType = use(method.inputType, f.package ?? "");
        method.outputType = use(method.outputType, f.package ?? "");
      }
    }
    f.dependency = [...deps].sort();
  }
}

/**
 * The reflection service for ToolGateway, grpc.health.v1.Health, grpc.reflection.v1 and the
 * google.rpc error model, with canonical file names and dependencies. Add it to the server with `addToServer`.
 */
export function createReflectionService(): ReflectionService {
  const health = protoLoader.loadSync(
    packagedProto("grpc-health-check", "proto/health/v1/health.proto"),
    LOADER_OPTIONS,
  );
  const reflection = protoLoader.loadSync(
    packagedProto("@grpc/reflection", "build/proto/grpc/reflection/v1/reflection.proto"),
    LOADER_OPTIONS,
  );
  const rpc = protoLoader.loadSync(
    ["google/rpc/status.proto", "google/rpc/error_details.proto"],
    LOADER_OPTIONS,
  );
  // Each definition's per-package files (the same google_protobuf.proto may differ between them).
  const merged: FileProto[] = [];
  for (const definition of [loadGateway().definition, health, reflection, rpc]) {
    const byName = new Map<string, FileProto>();
    for (const entry of Object.values(definition)) {
      for (const bytes of (entry as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos ?? []) {
        const file = descriptor.FileDescriptorProto.decode(bytes) as unknown as FileProto;
        if (file.name && !byName.has(file.name)) byName.set(file.name, file);
      }
    }
    merged.push(...byName.values());
  }
  const files = canonicalFiles(merged);
  for (const f of files.values())
    for (const m of f.messageType ?? []) repairMessage(m, f.package === "google.protobuf");
  linkDependencies(files);
  const fileDescriptorProtos = [...files.values()].map((f) =>
    Buffer.from(
      descriptor.FileDescriptorProto.encode(descriptor.FileDescriptorProto.fromObject(f as object)).finish(),
    ),
  );
  // @grpc/reflection reads only `fileDescriptorProtos` of each entry of the definition.
  return new ReflectionService({
    files: { format: "", type: {}, fileDescriptorProtos },
  } as unknown as protoLoader.PackageDefinition);
}
