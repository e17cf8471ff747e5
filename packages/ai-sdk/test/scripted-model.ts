import { MockLanguageModelV3 } from 'ai/test';

/** What the model is called with (the provider-level prompt, tools and settings). */
export type CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
/** One part of what a model generates. */
export type Content = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>['content'][number];

/** One scripted turn: what the model "says" (tool calls or text), possibly looking at its prompt. */
export type Turn = Content[] | ((call: CallOptions) => Content[]);

/** A tool call as a model emits it (its input JSON-encoded). */
export function call(toolCallId: string, toolName: string, input: unknown): Content {
  return { type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) };
}

/** The AI SDK's own mock model, answering each `doGenerate` with the next turn of the script. */
export function scriptedModel(turns: Turn[]): MockLanguageModelV3 {
  let index = 0;
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const turn = turns[index++];
      if (!turn) throw new Error(`the script has no turn ${index}`);
      const content = typeof turn === 'function' ? turn(options) : turn;
      const calls = content.some((part) => part.type === 'tool-call');
      return {
        content,
        finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 5, text: 5, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}
