/**
 * The OpenID Connect relying party of the dashboard: authorization code flow with PKCE (S256),
 * state and nonce, through openid-client v6 against any standard issuer. Discovery happens on
 * first use and is retried on the next sign-in when it fails (the provider may start later
 * than the service, or be the embedded development provider of this very process).
 */
import * as oidc from "openid-client";
import { z } from "zod";
import type { ResolvedOidc } from "./settings.js";

/** What the browser keeps (sealed) between the redirect to the provider and the callback. */
export const LoginStateSchema = z.object({
  state: z.string().min(16),
  nonce: z.string().min(16),
  verifier: z.string().min(43),
  returnTo: z.string(),
});
export type LoginState = z.infer<typeof LoginStateSchema>;

/** The identity a provider asserted. `email` is lowercased. */
export interface SignedInIdentity {
  subject: string;
  email: string;
  name: string | null;
  /** The `tollgate_org` claim (an organization slug), when the provider sends one. */
  tollgateOrg: unknown;
}

/** Raised when the provider's answer cannot be used; `message` is safe to show. */
export class SignInError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SignInError";
  }
}

const isPlainHttp = (url: string) => new URL(url).protocol === "http:";

/** One relying party for one resolved configuration. */
export class OidcClient {
  private config: Promise<oidc.Configuration> | null = null;

  /**
   * `fetch` replaces the HTTP client towards the provider (the development loopback).
   * @throws Error when the issuer is plain `http://` and `settings.allowInsecureHttp` is false
   *   (OIDC_ALLOW_INSECURE_HTTP; the configuration refuses it first, naming the variable).
   */
  constructor(
    private readonly settings: ResolvedOidc,
    private readonly opts: { fetch?: oidc.CustomFetch } = {},
  ) {
    if (isPlainHttp(settings.issuerUrl) && !settings.allowInsecureHttp) {
      throw new Error(
        "OIDC issuer: plain http:// is refused; use https://, or set OIDC_ALLOW_INSECURE_HTTP=true for development",
      );
    }
  }

  /** The resolved settings (no secret is ever printed from here). */
  get issuer(): string {
    return this.settings.issuerUrl;
  }

  private configuration(): Promise<oidc.Configuration> {
    if (!this.config) {
      const s = this.settings;
      // Only reachable with allowInsecureHttp (the constructor refuses it otherwise).
      const insecure = isPlainHttp(s.issuerUrl) && s.allowInsecureHttp;
      this.config = oidc
        .discovery(
          new URL(s.issuerUrl),
          s.clientId,
          s.clientSecret ?? undefined,
          s.clientSecret ? oidc.ClientSecretBasic(s.clientSecret) : oidc.None(),
          {
            timeout: 10,
            ...(insecure && { execute: [oidc.allowInsecureRequests] }),
            ...(this.opts.fetch && { [oidc.customFetch]: this.opts.fetch }),
          },
        )
        .catch((err) => {
          this.config = null;
          throw new SignInError("The identity provider is unreachable or misconfigured.", { cause: err });
        });
    }
    return this.config;
  }

  /** Starts a sign-in: the provider URL to redirect to, and the state to keep sealed. */
  async start(
    returnTo: string,
    opts: { forceLogin?: boolean } = {},
  ): Promise<{ url: string; state: LoginState }> {
    const config = await this.configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const state: LoginState = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier, returnTo };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.settings.redirectUrl,
      scope: this.settings.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: state.state,
      nonce: state.nonce,
      ...(opts.forceLogin && { prompt: "login" }),
    });
    return { url: url.href, state };
  }

  /**
   * Finishes a sign-in from the callback's query string: exchanges the code (with the PKCE
   * verifier), validates the ID token (issuer, audience, nonce, signature) and returns the
   * identity. Reads the e-mail address from userinfo when the ID token lacks it.
   * @throws SignInError when the provider refused, the state does not match, or no verified
   *   e-mail address is available.
   */
  async finish(callbackQuery: string, saved: LoginState): Promise<SignedInIdentity> {
    const config = await this.configuration();
    const current = new URL(this.settings.redirectUrl);
    current.search = callbackQuery;
    const providerError = current.searchParams.get("error");
    if (providerError) {
      throw new SignInError(
        providerError === "access_denied"
          ? "Sign-in was cancelled."
          : `The identity provider refused the sign-in (${providerError}).`,
      );
    }
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: saved.verifier,
        expectedState: saved.state,
        expectedNonce: saved.nonce,
        idTokenExpected: true,
      });
    } catch (err) {
      throw new SignInError("The sign-in response was invalid or expired. Please sign in again.", {
        cause: err,
      });
    }
    const claims = tokens.claims();
    if (!claims) throw new SignInError("The identity provider returned no ID token.");
    let email = typeof claims.email === "string" ? claims.email : undefined;
    let verified = claims.email_verified;
    let name = typeof claims.name === "string" ? claims.name : null;
    let org = claims.tollgate_org;
    if (!email) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub).catch((err) => {
        throw new SignInError("Could not read your profile from the identity provider.", { cause: err });
      });
      email = typeof info.email === "string" ? info.email : undefined;
      verified = info.email_verified;
      name ??= typeof info.name === "string" ? info.name : null;
      org ??= info.tollgate_org;
    }
    if (!email)
      throw new SignInError("The identity provider did not share your e-mail address (scope email).");
    if (verified === false)
      throw new SignInError("Your e-mail address is not verified at the identity provider.");
    return { subject: claims.sub, email: email.toLowerCase(), name, tollgateOrg: org };
  }
}
