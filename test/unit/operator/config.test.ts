import { describe, expect, it } from "vitest";
import {
  loadOperatorConfig,
  OperatorConfigError,
  operatorEnvironmentHelp,
} from "../../../operator/config.js";
import { nextStatus } from "../../../operator/controllers/runtime/conditions.js";
import { AppliedGenerations } from "../../../operator/controllers/runtime/predicates.js";
import { classifyFailure, formatIssues } from "../../../operator/controllers/runtime/resource-reconciler.js";
import {
  FINALIZER,
  GovernancePolicySpecSchema,
  type TollgateResource,
} from "../../../operator/crds/schema.js";
import { AdminApiError } from "../../../operator/governance/client.js";
import { INFORMER_BACKOFF, nextBackoff } from "../../../operator/kube/informer.js";
import {
  DEFAULT_SIDECAR_PORTS,
  DEFAULT_SIDECAR_RESOURCES,
  SIDECAR_NODE_OPTIONS,
} from "../../../operator/webhook/sidecar.js";

const base = {
  TOLLGATE_SERVICE_URL: "http://tollgate:8000",
  TOLLGATE_ADMIN_TOKEN_FILE: "/var/run/secrets/token",
};

describe("loadOperatorConfig", () => {
  it("applies defaults", () => {
    const c = loadOperatorConfig({ ...base, TOLLGATE_OPERATOR_NAMESPACE: "tg", POD_NAME: "op-0" });
    expect(c).toMatchObject({
      serviceUrl: "http://tollgate:8000",
      namespace: "tg",
      identity: "op-0",
      lease: { name: "tollgate-operator", durationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
      webhook: {
        port: 9443,
        configurationName: "tollgate-sidecar-injector",
        policyValidatorName: "tollgate-policy-validator",
        certMode: "self-signed",
        extraSans: [],
      },
      sidecar: { serviceUrl: "http://tollgate:8000", mode: "container" },
      resyncMs: 300_000,
      workers: 4,
    });
    expect(c.sidecar.image).toMatch(/^ghcr\.io\/tollgate\/sidecar:/);
  });

  it("names every invalid variable", () => {
    try {
      loadOperatorConfig({ TOLLGATE_SERVICE_URL: "not a url", TOLLGATE_WEBHOOK_PORT: "99999" });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(OperatorConfigError);
      const msg = (err as Error).message;
      expect(msg).toContain("TOLLGATE_SERVICE_URL");
      expect(msg).toContain("TOLLGATE_ADMIN_TOKEN_FILE");
      expect(msg).toContain("TOLLGATE_WEBHOOK_PORT");
    }
  });

  it("requires the renew deadline to be shorter than the lease", () => {
    expect(() =>
      loadOperatorConfig({
        ...base,
        TOLLGATE_LEASE_DURATION_SECONDS: "5",
        TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: "5",
      }),
    ).toThrow(/RENEW_DEADLINE/);
  });
});

describe("loadOperatorConfig: the injected sidecar (chart values sidecar.*)", () => {
  it("defaults to what the sidecar image and the chart's values.yaml set", () => {
    const c = loadOperatorConfig(base);
    expect(c.sidecar).toMatchObject({
      imagePullPolicy: "IfNotPresent",
      resources: DEFAULT_SIDECAR_RESOURCES,
      nodeOptions: SIDECAR_NODE_OPTIONS,
      ports: DEFAULT_SIDECAR_PORTS,
    });
  });

  it("parses the variables the chart renders", () => {
    const c = loadOperatorConfig({
      ...base,
      TOLLGATE_SIDECAR_IMAGE_PULL_POLICY: "Always",
      TOLLGATE_SIDECAR_RESOURCES:
        '{"limits":{"memory":"192Mi","cpu":1},"requests":{"cpu":"20m","memory":"80Mi"}}',
      TOLLGATE_SIDECAR_NODE_OPTIONS: " --max-old-space-size=96  --max_semi_space_size=2 ",
      TOLLGATE_SIDECAR_GRPC_PORT: "6000",
      TOLLGATE_SIDECAR_HTTP_PORT: "6001",
      TOLLGATE_SIDECAR_METRICS_PORT: "6002",
    });
    expect(c.sidecar).toMatchObject({
      imagePullPolicy: "Always",
      // Integer quantities (YAML `cpu: 1`) become strings, as the pod spec stores them.
      resources: { limits: { memory: "192Mi", cpu: "1" }, requests: { cpu: "20m", memory: "80Mi" } },
      nodeOptions: "--max-old-space-size=96  --max_semi_space_size=2",
      ports: { grpc: 6000, http: 6001, metrics: 6002 },
    });
  });

  it("an empty NODE_OPTIONS value is kept (the image's default applies)", () => {
    expect(loadOperatorConfig({ ...base, TOLLGATE_SIDECAR_NODE_OPTIONS: "" }).sidecar.nodeOptions).toBe("");
  });

  it.each([
    ["TOLLGATE_SIDECAR_IMAGE_PULL_POLICY", "Sometimes", /TOLLGATE_SIDECAR_IMAGE_PULL_POLICY/],
    ["TOLLGATE_SIDECAR_RESOURCES", "{requests:", /TOLLGATE_SIDECAR_RESOURCES: must be JSON/],
    [
      "TOLLGATE_SIDECAR_RESOURCES",
      '{"limits":{"memory":"lots"}}',
      /TOLLGATE_SIDECAR_RESOURCES\.limits\.memory/,
    ],
    ["TOLLGATE_SIDECAR_RESOURCES", '{"limit":{"memory":"1Gi"}}', /TOLLGATE_SIDECAR_RESOURCES/],
    [
      "TOLLGATE_SIDECAR_RESOURCES",
      '{"requests":{"memory":-1}}',
      /TOLLGATE_SIDECAR_RESOURCES\.requests\.memory/,
    ],
    // Node.js refuses these in NODE_OPTIONS: every injected sidecar would fail to start.
    [
      "TOLLGATE_SIDECAR_NODE_OPTIONS",
      "--max-old-space-size=128 --no-such-flag",
      /--no-such-flag is not a flag/,
    ],
    ["TOLLGATE_SIDECAR_NODE_OPTIONS", "--print=1", /--print=1 is not a flag/],
    ["TOLLGATE_SIDECAR_NODE_OPTIONS", "max-old-space-size=128", /max-old-space-size=128 is not a flag/],
    ["TOLLGATE_SIDECAR_GRPC_PORT", "0", /TOLLGATE_SIDECAR_GRPC_PORT/],
    ["TOLLGATE_SIDECAR_METRICS_PORT", "70000", /TOLLGATE_SIDECAR_METRICS_PORT/],
    ["TOLLGATE_SIDECAR_HTTP_PORT", "9091", /must differ/],
    ["TOLLGATE_SIDECAR_OTEL_ENV", "{otel", /TOLLGATE_SIDECAR_OTEL_ENV: must be a JSON object/],
    ["TOLLGATE_SIDECAR_OTEL_ENV", '{"PATH":"/bin"}', /TOLLGATE_SIDECAR_OTEL_ENV\.PATH: Invalid key/],
  ])("refuses %s=%s, naming the variable", (name, value, message) => {
    expect(() => loadOperatorConfig({ ...base, [name]: value })).toThrow(message);
  });

  it("lists the sidecar variables with their defaults in --help", () => {
    const help = operatorEnvironmentHelp();
    expect(help).toMatch(
      /TOLLGATE_SIDECAR_NODE_OPTIONS\s+.*\[default: "--max-semi-space-size=1 --max-old-space-size=128"\]/,
    );
    expect(help).toMatch(
      /TOLLGATE_SIDECAR_RESOURCES\s+.*\[default: \{"requests":\{"cpu":"50m","memory":"96Mi"\}/,
    );
    expect(help).toMatch(/TOLLGATE_SIDECAR_METRICS_PORT\s+.*\[default: 9091\]/);
    expect(help).toMatch(/TOLLGATE_SIDECAR_IMAGE_PULL_POLICY\s+.*\[default: "IfNotPresent"\]/);
  });
});

describe("reconcile helpers", () => {
  it("formats zod issues with Kubernetes-style field paths", () => {
    const r = GovernancePolicySpecSchema.safeParse({
      organizationRef: { name: "a" },
      customRules: [{ name: "r", match: { payload: { n: { between: 1 } } }, outcome: "allow" }],
    });
    expect(formatIssues(r.error!)).toMatch(/^spec\.customRules\[0\]\.match\.payload\.n: /);
  });

  it.each([
    [new AdminApiError(400, "TG_ERR_VALIDATION", "bad"), "ServiceRejected"],
    [new AdminApiError(404, "TG_ERR_NOT_FOUND", "Organization not found"), "OrganizationNotFound"],
    [new AdminApiError(503, "TG_ERR_INTERNAL", "down"), "ServiceUnavailable"],
    [new AdminApiError(0, "UNREACHABLE", "ECONNREFUSED"), "ServiceUnavailable"],
  ])("classifies %s", (err, reason) => {
    expect(classifyFailure(err).reason).toBe(reason);
  });

  it("rethrows errors that are not the service's", () => {
    expect(() => classifyFailure(new Error("kube"))).toThrow("kube");
  });

  it("informer reconnect backoff doubles from 1 s to 30 s", () => {
    const seq = [INFORMER_BACKOFF.initialMs as number];
    while (seq.length < 7) seq.push(nextBackoff(seq.at(-1)!));
    expect(seq).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it("AppliedGenerations skips events about a generation this replica already applied", () => {
    const applied = new AppliedGenerations();
    const obj = (
      generation: number,
      extra: Partial<TollgateResource["metadata"]> = {},
    ): TollgateResource => ({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "GovernancePolicy",
      metadata: { name: "p", namespace: "n", generation, finalizers: [FINALIZER], ...extra },
      spec: {},
    });
    const key = "GovernancePolicy/n/p";
    expect(applied.wants(key, obj(1))).toBe(true);
    applied.set(key, 1);
    // The finalizer update arrives before the status write: nothing new to do.
    expect(applied.wants(key, obj(1))).toBe(false);
    expect(applied.wants(key, obj(2))).toBe(true);
    expect(applied.wants(key, obj(1, { deletionTimestamp: "2024-01-01T00:00:00Z" }))).toBe(true);
    const synced = {
      ...obj(3),
      status: nextStatus(undefined, 3, { kind: "synced", message: "ok" }, new Date()),
    };
    expect(applied.wants(key, synced)).toBe(false);
    applied.delete(key);
    expect(applied.wants(key, obj(1))).toBe(true);
  });
});
