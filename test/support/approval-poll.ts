/** GET approval-status over real HTTP; resolves with the status code, JSON body and elapsed ms. */
export async function poll(base: string, key: string, chainId: string, query: string) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/chains/${chainId}/approval-status${query}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: r.status, body: await r.json(), ms: performance.now() - t0 };
}
