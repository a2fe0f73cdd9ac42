/**
 * Safe HTML building: a tagged template that escapes every interpolated value unless it is
 * already SafeHtml. All dashboard pages and HTML mails are built with it; nothing user- or
 * agent-supplied reaches the output unescaped.
 */

/** A fragment of trusted HTML. Create it only with `html` or `raw` on constant text. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const entities: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for HTML element content and quoted attribute values. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => entities[c]!);

/** Marks constant, trusted markup as safe. Never pass data to it. */
export const raw = (s: string): SafeHtml => new SafeHtml(s);

function render(v: unknown): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof SafeHtml) return v.value;
  if (Array.isArray(v)) return v.map(render).join("");
  return escapeHtml(String(v));
}

/**
 * Tagged template: `html\`<p>${name}</p>\`` escapes `name`. Arrays render each item; null,
 * undefined and false render nothing (so `${cond && html\`...\`}` works).
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}
