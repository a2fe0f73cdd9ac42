/** The pure mapping from a TokenReview answer to the verified workload identity (issue 27). */
import { describe, expect, it } from "vitest";
import {
  identityFromReview,
  looksLikeJwt,
  PodExtra,
  TokenRefused,
} from "../../src/service/identity/principal.js";

const ok = {
  authenticated: true,
  audiences: ["tollgate"],
  user: {
    username: "system:serviceaccount:payments:invoice-agent",
    extra: { [PodExtra.name]: ["payer-7d9"], [PodExtra.uid]: ["6f1c-uid"] },
  },
};

describe("identityFromReview", () => {
  it("maps a pod-bound service account token to namespace, service account, pod and SPIFFE ID", () => {
    expect(identityFromReview(ok, "tollgate", "example.org")).toEqual({
      namespace: "payments",
      service_account: "invoice-agent",
      pod_name: "payer-7d9",
      pod_uid: "6f1c-uid",
      spiffe_id: "spiffe://example.org/ns/payments/sa/invoice-agent",
    });
  });

  it.each([
    ["unauthenticated", { ...ok, authenticated: false }, /not valid/],
    ["another audience", { ...ok, audiences: ["https://kubernetes.default.svc"] }, /audience "tollgate"/],
    ["no audiences", { ...ok, audiences: undefined }, /audience/],
    ["a user, not a service account", { ...ok, user: { ...ok.user, username: "alice" } }, /service account/],
    [
      "a malformed name",
      { ...ok, user: { ...ok.user, username: "system:serviceaccount:a:b:c" } },
      /malformed/,
    ],
    ["a token bound to no pod", { ...ok, user: { username: ok.user.username } }, /not bound to a pod/],
  ])("refuses %s", (_what, status, message) => {
    expect(() => identityFromReview(status, "tollgate", "cluster.local")).toThrow(TokenRefused);
    expect(() => identityFromReview(status, "tollgate", "cluster.local")).toThrow(message);
  });

  it("tells workload tokens (JWTs) from API keys and session secrets", () => {
    expect(looksLikeJwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln")).toBe(true);
    expect(looksLikeJwt("tg_abc")).toBe(false);
    expect(looksLikeJwt("eyJhbGci.only-two")).toBe(false);
    expect(looksLikeJwt("eyJa.b.c\u0000")).toBe(false);
  });
});
