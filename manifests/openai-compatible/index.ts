import { net } from "@tether/cap";
import { excerpt, ProviderError, reportDeltas, sseEvents, type Provider, type Usage } from "@tether/ext";

interface Chunk {
  model?: string;
  choices?: Array<{ delta?: { content?: string | null }; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
}

/** POST {base_url}/chat/completions with stream: true; the body's SSE chunks are read once it is whole. */
const chat: Provider = async (request, ctx) => {
  const body = {
    model: request.model,
    messages: request.messages,
    max_tokens: request.max_tokens,
    stream: true,
    stream_options: { include_usage: true },
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.stop !== undefined ? { stop: request.stop } : {}),
  };
  const res = await net.fetch(`${request.base_url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
    ...(request.secret !== null ? { secret: request.secret } : {}),
  });
  if (!res.ok) throw new ProviderError(`the API answered ${res.status}: ${excerpt(res.text())}`);
  const deltas: string[] = [];
  let usage: Usage | null = null;
  let stopReason: string | null = null;
  let model = request.model;
  for (const event of sseEvents(res.text())) {
    if (event.data === "[DONE]") break;
    let chunk: Chunk;
    try {
      chunk = JSON.parse(event.data) as Chunk;
    } catch {
      throw new ProviderError(`the API's stream is malformed: an event is not JSON (${excerpt(event.data)})`);
    }
    if (typeof chunk.model === "string") model = chunk.model;
    for (const choice of chunk.choices ?? []) {
      if (typeof choice.delta?.content === "string") deltas.push(choice.delta.content);
      if (typeof choice.finish_reason === "string") stopReason = choice.finish_reason;
    }
    if (chunk.usage)
      usage = { input_tokens: chunk.usage.prompt_tokens ?? 0, output_tokens: chunk.usage.completion_tokens ?? 0 };
  }
  if (usage === null)
    throw new ProviderError("the API's stream ended without usage (it must honour stream_options.include_usage)");
  reportDeltas(ctx, deltas);
  return { text: deltas.join(""), usage, stop_reason: stopReason, model };
};

export const providers: Record<string, Provider> = { "local-openai": chat };
