// A session's token usage as one line of text (issue 21). Counts the provider did not report are
// left out rather than shown as 0; a session without any reported usage says so.

import type { Usage } from "./model";

/** `1,234 in · 56 out · 3 model calls`, the parts the provider reported. */
export function usageText(usage: Usage | undefined): string {
  if (!usage) return "not reported by the model";
  const parts: string[] = [];
  if (usage.inputTokens !== undefined) parts.push(`${usage.inputTokens.toLocaleString("en-US")} in`);
  if (usage.outputTokens !== undefined) parts.push(`${usage.outputTokens.toLocaleString("en-US")} out`);
  const calls = usage.modelCalls;
  parts.push(`${calls.toLocaleString("en-US")} model ${calls === 1 ? "call" : "calls"}`);
  return parts.join(" · ");
}
