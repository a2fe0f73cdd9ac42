/**
 * The part of oidc-provider v9 (which ships no type declarations) that the development
 * provider uses.
 */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  export interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export interface GrantConstructor {
    new (init: { clientId: string; accountId: string }): Grant;
    find(id: string): Promise<Grant | undefined>;
  }

  export interface OIDCContext {
    provider: { Grant: GrantConstructor };
    client?: { clientId: string };
    session?: { accountId?: string; grantIdFor(clientId: string): string | undefined };
    result?: { consent?: { grantId?: string } };
  }

  export interface KoaContextWithOIDC {
    oidc: OIDCContext;
    type: string;
    body: unknown;
  }

  export interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown> & { sub: string }>;
  }

  export interface ClientMetadata {
    client_id: string;
    client_secret?: string;
    redirect_uris: string[];
    grant_types?: string[];
    response_types?: string[];
    token_endpoint_auth_method?: string;
  }

  export interface Configuration {
    clients?: ClientMetadata[];
    jwks?: { keys: unknown[] };
    cookies?: { keys?: string[] };
    features?: Record<string, { enabled: boolean }>;
    interactions?: { url(ctx: KoaContextWithOIDC, interaction: { uid: string }): string };
    pkce?: { required(ctx: KoaContextWithOIDC, client: unknown): boolean };
    claims?: Record<string, string[] | null>;
    conformIdTokenClaims?: boolean;
    ttl?: Record<string, number>;
    findAccount?(ctx: KoaContextWithOIDC, sub: string): Promise<Account | undefined>;
    loadExistingGrant?(ctx: KoaContextWithOIDC): Promise<Grant | undefined>;
    renderError?(ctx: KoaContextWithOIDC, out: Record<string, unknown>, error: Error): Promise<void>;
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[]; details: Record<string, unknown> };
    params: Record<string, unknown>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
  }
  export { Provider };
}
