/**
 * A minimal Reflect metadata API (the subset of the reflect-metadata proposal that tsyringe and
 * TypeScript's emitted decorator metadata use), needed by @peculiar/x509, which refuses to load
 * without one. No polyfill package is installed, so this module provides `Reflect.metadata`,
 * `defineMetadata`, `getMetadata`, `getOwnMetadata`, `hasMetadata` and `hasOwnMetadata`, backed
 * by a WeakMap. It leaves an existing implementation untouched. Import it before @peculiar/x509.
 */
type Key = unknown;
type Target = object;

const store = new WeakMap<Target, Map<string | symbol | undefined, Map<Key, unknown>>>();

function own(target: Target, property: string | symbol | undefined, create: boolean) {
  let byProperty = store.get(target);
  if (!byProperty) {
    if (!create) return undefined;
    byProperty = new Map();
    store.set(target, byProperty);
  }
  let map = byProperty.get(property);
  if (!map && create) {
    map = new Map();
    byProperty.set(property, map);
  }
  return map;
}

const api = {
  defineMetadata(key: Key, value: unknown, target: Target, property?: string | symbol) {
    own(target, property, true)!.set(key, value);
  },
  getOwnMetadata(key: Key, target: Target, property?: string | symbol) {
    return own(target, property, false)?.get(key);
  },
  hasOwnMetadata(key: Key, target: Target, property?: string | symbol) {
    return own(target, property, false)?.has(key) ?? false;
  },
  getMetadata(key: Key, target: Target, property?: string | symbol): unknown {
    for (let t: Target | null = target; t; t = Object.getPrototypeOf(t)) {
      const map = own(t, property, false);
      if (map?.has(key)) return map.get(key);
    }
    return undefined;
  },
  hasMetadata(key: Key, target: Target, property?: string | symbol): boolean {
    for (let t: Target | null = target; t; t = Object.getPrototypeOf(t)) {
      if (own(t, property, false)?.has(key)) return true;
    }
    return false;
  },
  metadata(key: Key, value: unknown) {
    return (target: Target, property?: string | symbol) => api.defineMetadata(key, value, target, property);
  },
};

const R = Reflect as unknown as Record<string, unknown>;
if (typeof R.getMetadata !== "function") {
  for (const [name, fn] of Object.entries(api)) R[name] = fn;
}
