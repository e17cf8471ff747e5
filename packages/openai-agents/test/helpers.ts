import type { AgentInputItem, RunItem } from '@openai/agents';
import { setTracingDisabled } from '@openai/agents';
import type { Tool, ToolResult } from '@ws/core';

// No traces leave a test run (the exporter would only complain that there is no API key).
setTracingDisabled(true);

/** A 1×1 PNG. */
export const PIXEL_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
export const PIXEL_DATA_URL = `data:image/png;base64,${PIXEL_BASE64}`;

/** The function_call_result items of a run's history, by call id. */
export function outputsByCall(items: readonly AgentInputItem[]): Map<string, unknown> {
  const outputs = new Map<string, unknown>();
  for (const item of items) {
    if (item.type === 'function_call_result') outputs.set(item.callId, item.output);
  }
  return outputs;
}

/** The text the model saw for one call: a string output, or the text parts of a structured one. */
export function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  const parts = Array.isArray(output) ? output : [output];
  return parts
    .map((part) => (part && typeof part === 'object' && 'text' in part ? String(part.text) : ''))
    .join('\n');
}

/** The custom data the adapter attached to the tool output item of one call. */
export function customDataOf(items: readonly RunItem[], callId: string): Record<string, unknown> | undefined {
  for (const item of items) {
    if (item.type === 'tool_call_output_item' && 'callId' in item.rawItem && item.rawItem.callId === callId)
      return item.customData;
  }
  return undefined;
}

/**
 * A tool that keeps the inputs it was called with: the adapter's side of the contract, seen from
 * inside `Tool.call` (what the SDK hands over after its strict-mode normalisation).
 */
export function recordingTool(
  name: string,
  inputSchema: Record<string, unknown>,
  result: ToolResult = { content: [{ type: 'text', text: 'ok' }], isError: false },
): Tool & { inputs: unknown[]; signals: (AbortSignal | undefined)[] } {
  const inputs: unknown[] = [];
  const signals: (AbortSignal | undefined)[] = [];
  return {
    name,
    description: `Records its input (${name}).`,
    inputSchema,
    annotations: { readOnlyHint: true, concurrencySafe: true },
    inputs,
    signals,
    async call(input, options = {}) {
      inputs.push(input);
      signals.push(options.signal);
      return result;
    },
  };
}
