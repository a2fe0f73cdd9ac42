/** json-canon 1.x (which ships no type declarations): its one export, the RFC 8785 serializer. */
declare module "json-canon" {
  /** The RFC 8785 canonical JSON text of `value`; throws on NaN, ±Infinity and lone surrogates. */
  export default function serialize(value: unknown): string;
}
