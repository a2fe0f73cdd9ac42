/** JSON calls of the service's HTTP API from the end-to-end and cluster suites. */

/**
 * One JSON call with a bearer token (`body` sent as JSON when given); throws on a non-2xx
 * answer. Returns the status, the parsed body (undefined when empty) and the headers.
 */
export async function apiCall(
  base: string,
  token: string,
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return { status: res.status, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** {@link apiCall}, returning the parsed body only. */
export async function api(
  base: string,
  token: string,
  method: string,
  url: string,
  body?: unknown,
): Promise<any> {
  return (await apiCall(base, token, method, url, body)).json;
}
