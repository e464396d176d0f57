// Building the page with DOM APIs only. Every string child becomes a Text node (textContent), so
// a session's or a plugin's text is shown as the characters it is, never parsed as HTML. There is
// no innerHTML anywhere in the console; the strict Content-Security-Policy backs this up.

/** A child: an element, a text, or nothing. */
export type Child = Node | string | number | null | undefined | false | Child[];

/** Attributes: strings set with setAttribute; `on*` functions added as listeners. */
export type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

const SVG_NS = "http://www.w3.org/2000/svg";

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

function apply(node: Element, attrs: Attrs | undefined): void {
  if (!attrs) return;
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      node.addEventListener(name.slice(2).toLowerCase(), value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

/** An HTML element. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  apply(node, attrs);
  append(node, children);
  return node;
}

/** An SVG element (the latency chart). */
export function svg(tag: string, attrs?: Attrs, ...children: Child[]): SVGElement {
  const node = document.createElementNS(SVG_NS, tag);
  apply(node, attrs);
  append(node, children);
  return node;
}

/** Replaces `parent`'s children with `children`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A button: real, keyboard reachable, with a label. */
export function button(label: string, onClick: () => void, attrs: Attrs = {}): HTMLButtonElement {
  return h("button", { type: "button", ...attrs, onclick: () => onClick() }, label);
}

/** Local time of `ms` (Unix epoch milliseconds): `14:03:22`, with the date when not today. */
export function clock(ms: number): string {
  if (!Number.isFinite(ms) || ms <= 0) return "–";
  const when = new Date(ms);
  const time = when.toLocaleTimeString([], { hour12: false });
  return when.toDateString() === new Date().toDateString()
    ? time
    : `${when.toLocaleDateString()} ${time}`;
}

/** JSON for people: indented, or the value's own text. */
export function json(value: unknown): string {
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2) ?? String(value);
}
