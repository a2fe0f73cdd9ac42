/**
 * GovernancePolicies with CEL rules behind a real kube-apiserver, the operator and the service
 * (issue 28):
 * - the operator's validating webhook refuses a policy whose expression does not compile
 *   (`kubectl apply` prints the rule and the position), on create and on a spec update; where the
 *   webhook is not asked (an excluded namespace) the service's refusal shows as Synced=False with
 *   the same message;
 * - replay before enforce: `spec.replay` makes the operator replay each new generation over the
 *   organization's recorded events and write the summary into status; while
 *   `spec.replay.enforce` is false the candidate is not applied, flipping it applies it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { policyValidatorConfiguration } from "../../operator/webhook/configuration.js";
import { conditionOf, OPERATOR_NAMESPACE, useOperatorEnv, waitFor, waitReady } from "./helpers.js";

const NS = "team-a";
const policy = (name: string, spec: Record<string, unknown>, namespace = NS) => ({
  apiVersion: "tollgate.dev/v1alpha1",
  kind: "GovernancePolicy",
  metadata: { name, namespace },
  spec: { organizationRef: { name: "acme" }, ...spec },
});
const rules = (expression: string) => ({
  customRules: [
    { name: "fine", expression: "chain.eventCount > 100", outcome: "deny", reason: "long" },
    { name: "broken", expression, outcome: "deny", reason: "r" },
  ],
});
const BAD = "action.payload.total > 1000 &&& true";
const REFUSAL =
  /admission webhook "governancepolicies\.tollgate\.dev" denied the request: spec\.customRules\[1\]\.expression: custom rule "broken": invalid CEL expression: syntax error: .* at line 1, column 29/;

describe("GovernancePolicies with CEL rules: admission and replay before enforce", () => {
  const fx = useOperatorEnv({ identity: "policy-test" });

  beforeAll(async () => {
    await fx.env.apply(
      policyValidatorConfiguration({
        target: { url: `https://127.0.0.1:${fx.op!.webhookPort}/validate-governancepolicy` },
        operatorNamespace: OPERATOR_NAMESPACE,
        timeoutSeconds: 10,
      }),
      { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
      {
        apiVersion: "tollgate.dev/v1alpha1",
        kind: "Organization",
        metadata: { name: "acme" },
        spec: { slug: "acme" },
      },
    );
    await waitReady(fx.env, "organization", "acme");
    // The operator publishes its CA into the validator's caBundle, as into the injector's.
    const bundle = Buffer.from(fx.op!.caCert!).toString("base64");
    await waitFor("caBundle of the policy validator", async () => {
      const c = await fx.env.get("validatingwebhookconfiguration", "tollgate-policy-validator");
      return c?.webhooks?.[0]?.clientConfig?.caBundle === bundle;
    });
  });

  it("kubectl apply refuses a policy whose expression does not compile, naming the rule and the position", async () => {
    const created = await fx.env.kTry(["apply", "-f", "-"], JSON.stringify(policy("bad", rules(BAD))));
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(REFUSAL);
    expect(await fx.env.get("governancepolicy", "bad", NS)).toBeUndefined();

    // A good policy is admitted and synced; an update that breaks it is refused and the stored
    // (and enforced) spec stays the good one.
    await fx.env.apply(policy("cel", rules("action.payload.invoice.total > 1000")));
    const synced = await waitReady(fx.env, "governancepolicy", "cel", NS);
    const updated = await fx.env.kTry(["apply", "-f", "-"], JSON.stringify(policy("cel", rules(BAD))));
    expect(updated.code).not.toBe(0);
    expect(updated.stderr).toMatch(REFUSAL);
    const after = await fx.env.get("governancepolicy", "cel", NS);
    expect(after.metadata.generation).toBe(synced.metadata.generation);
    expect(after.spec.customRules[1].expression).toBe("action.payload.invoice.total > 1000");
  });

  it("where the webhook is not asked, the service's refusal is Synced=False naming the rule and the position", async () => {
    // The operator's namespace is excluded from the webhooks (as for the sidecar injector).
    await fx.env.apply(policy("bad", rules(BAD), OPERATOR_NAMESPACE));
    const obj = await waitFor("Synced=False", async () => {
      const o = await fx.env.get("governancepolicy", "bad", OPERATOR_NAMESPACE);
      return conditionOf(o, "Synced")?.status === "False" ? o : undefined;
    });
    const synced = conditionOf(obj, "Synced")!;
    expect(synced.reason).toBe("ServiceRejected");
    expect(synced.message).toMatch(
      /custom_rules\.1\.expression: custom rule "broken": invalid CEL expression: syntax error: .* at line 1, column 29$/,
    );
    await fx.env.k([
      "delete",
      "governancepolicy",
      "bad",
      "-n",
      OPERATOR_NAMESPACE,
      "--wait=true",
      "--timeout=60s",
    ]);
  });

  it("replay before enforce: each generation is replayed into status; enforce false keeps it out of the service until flipped", async () => {
    // The policy of the first test would decide every action here (its rule reads invoice.total).
    await fx.env.k(["delete", "governancepolicy", "cel", "-n", NS, "--wait=true", "--timeout=60s"]);
    const key = await fx.svc.call("POST", "/v1/admin/organizations/acme/api-keys", {
      token: fx.svc.adminToken,
      body: { name: "replay-test", role: "client" },
    });
    expect(key.statusCode, key.body).toBe(201);
    const clientKey = key.json().api_key as string;
    const runChain = async (...actions: string[]) => {
      const c = await fx.svc.call("POST", "/v1/chains", { token: clientKey, body: { name: "replay" } });
      expect(c.statusCode, c.body).toBe(201);
      const decisions = [];
      for (const action_name of actions) {
        const r = await fx.svc.call("POST", `/v1/chains/${c.json().chain_id}/actions`, {
          token: clientKey,
          body: { agent_name: "mailer", action_type: "tool_call", action_name, payload: { template: "t" } },
        });
        expect(r.statusCode, r.body).toBe(200);
        decisions.push([r.json().policy_decision, r.json().policy_name]);
      }
      return decisions;
    };
    // Recorded an hour ago (the operator's window ends at its own now).
    fx.svc.clock.set(Date.now() - 3_600_000);
    await runChain("read_customer", "send_email");
    await runChain("send_email");
    await runChain("read_customer", "send_email");

    const mail = (outcome: string, replay: Record<string, unknown>) =>
      policy("mail", {
        customRules: [
          {
            name: "no-email-after-customer-read",
            expression: 'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"',
            outcome,
            reason: "Sending e-mail after reading customer data",
          },
        ],
        replay,
      });
    /** The policy once the operator replayed its current generation (and, when `synced`, applied it). */
    const replayed = (synced: "True" | "False") =>
      waitFor("the replay of the current generation", async () => {
        const o = await fx.env.get("governancepolicy", "mail", NS);
        const s = conditionOf(o, "Synced");
        return o?.status?.replay?.observedGeneration === o?.metadata.generation &&
          s?.observedGeneration === o?.metadata.generation &&
          s?.status === synced
          ? o
          : undefined;
      });
    const servicePolicies = async () =>
      (await fx.svc.call("GET", "/v1/admin/organizations/acme", { token: fx.svc.adminToken }))
        .json()
        .policies.map((p: { name: string }) => p.name) as string[];

    // 1. enforce defaults to false: replayed, not applied.
    await fx.env.apply(mail("require_approval", { window: "24h" }));
    let obj = await replayed("False");
    expect(obj.spec.replay.enforce).toBe(false); // the CRD's default
    expect(obj.status.replay).toMatchObject({
      observedGeneration: 1,
      eventsRead: 5,
      eventsReplayed: 5,
      chainsRead: 3,
      changed: 2,
      changes: { "allow→require_approval": 2 },
      truncated: false,
    });
    expect(Date.parse(obj.status.replay.to) - Date.parse(obj.status.replay.from)).toBe(86_400_000);
    expect(conditionOf(obj, "Synced")).toMatchObject({ reason: "NotEnforced" });
    expect(conditionOf(obj, "Replayed")).toMatchObject({
      status: "True",
      reason: "Replayed",
      message: "Replayed 5 events of 24h: 2 decisions change (allow→require_approval 2)",
    });
    expect(await servicePolicies()).not.toContain("team-a.mail");
    expect(await runChain("read_customer", "send_email")).toEqual([
      ["allow", null],
      ["allow", null],
    ]);
    const listed = await fx.env.k(["get", "governancepolicy", "mail", "-n", NS]);
    expect(listed).toMatch(/mail\s+acme\s+2\s+False\s+False/); // Replay-Changed, Ready, Synced

    // 2. A changed candidate is replayed again (the chain just recorded is in the window too).
    await fx.env.apply(mail("deny", { window: "24h" }));
    obj = await replayed("False");
    expect(obj.status.replay).toMatchObject({
      observedGeneration: 2,
      changed: 3,
      changes: { "allow→deny": 3 },
    });

    // 3. Flipped to enforce: applied, and it decides.
    await fx.env.apply(mail("deny", { window: "24h", enforce: true }));
    obj = await replayed("True");
    expect(obj.status.replay.observedGeneration).toBe(3);
    expect(conditionOf(obj, "Replayed")?.status).toBe("True");
    expect(await servicePolicies()).toContain("team-a.mail");
    expect(await runChain("read_customer", "send_email")).toEqual([
      ["allow", null],
      ["deny", "no-email-after-customer-read"],
    ]);
    const enforcedVersion = obj.status.serviceVersion;

    // 4. The next candidate replaces the enforced version in the replay, which stays enforced.
    await fx.env.apply(mail("require_approval", { window: "24h", maxEvents: 1000 }));
    obj = await replayed("False");
    expect(obj.status.replay).toMatchObject({
      observedGeneration: 4,
      changes: { "allow→require_approval": 3, "deny→require_approval": 1 },
    });
    expect(obj.status.serviceVersion).toBe(enforcedVersion);
    expect(await runChain("read_customer", "send_email")).toEqual([
      ["allow", null],
      ["deny", "no-email-after-customer-read"],
    ]);

    // 5. Without spec.replay the spec is applied as any other, and the replay leaves the status.
    await fx.env.k([
      "patch",
      "governancepolicy",
      "mail",
      "-n",
      NS,
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/spec/replay"}]',
    ]);
    obj = await waitReady(fx.env, "governancepolicy", "mail", NS);
    expect(obj.status.replay).toBeUndefined();
    expect(conditionOf(obj, "Replayed")).toBeUndefined();
  });
});
