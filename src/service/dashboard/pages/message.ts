/**
 * Small pages that say one thing: errors, refused links, sign-in problems, signed out.
 */
import { html, type SafeHtml } from "../html.js";

/** A centered card with a title, text and optional actions (links). */
export function messageBody(opts: {
  title: string;
  text: string | SafeHtml;
  tone?: "ok" | "bad" | "info" | "warn";
  actions?: { href: string; label: string; primary?: boolean }[];
}): SafeHtml {
  return html`<section class="card center-card" aria-labelledby="msg-title">
<h1 id="msg-title">${opts.title}</h1>
<div class="notice ${opts.tone ?? "info"}">${opts.text}</div>
${
  opts.actions?.length &&
  html`<div class="actions">${opts.actions.map(
    (a) => html`<a class="button ${a.primary ? "primary" : "secondary"}" href="${a.href}">${a.label}</a>`,
  )}</div>`
}
</section>`;
}

/** Title of an error page by HTTP status. */
export function errorTitle(status: number): string {
  if (status === 400) return "That request was not valid";
  if (status === 401) return "Please sign in";
  if (status === 403) return "Not allowed";
  if (status === 404) return "Not found";
  if (status === 409) return "Already done";
  if (status === 410) return "Expired";
  return "Something went wrong";
}
