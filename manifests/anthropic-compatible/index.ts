import { net } from "@tether/cap";
import { excerpt, ProviderError, reportDeltas, sseEvents, type ChatMessage, type Provider } from "@tether/ext";

interface StreamEvent {
  type?: string;
  message?: { model?: string; usage?: { input_tokens?: number; output_tokens?: number } };
  delta?: { type?: string; text?: string; stop_reason?: string | null };
  usage?: { output_tokens?: number };
  error?: { message?: string };
}

/** System messages go in `system`; the rest stay in order. */
function split(messages: readonly ChatMessage[]): { system: string; messages: ChatMessage[] } {
  const system = messages
    .filter((m) => m.role === "system")
    .map((m) => m.content)
    .join("\n\n");
  return { system, messages: messages.filter((m) => m.role !== "system") };
}

/** POST {base_url}/messages with stream: true; the body's SSE events are read once it is whole. */
const messages: Provider = async (request, ctx) => {
  const { system, messages } = split(request.messages);
  const body = {
    model: request.model,
    messages,
    max_tokens: request.max_tokens,
    stream: true,
    ...(system !== "" ? { system } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.stop !== undefined ? { stop_sequences: request.stop } : {}),
  };
  const res = await net.fetch(`${request.base_url}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
    ...(request.secret !== null ? { secret: request.secret } : {}),
  });
  if (!res.ok) throw new ProviderError(`the API answered ${res.status}: ${excerpt(res.text())}`);
  const deltas: string[] = [];
  let input = 0;
  let output = 0;
  let stopReason: string | null = null;
  let model = request.model;
  let stopped = false;
  for (const event of sseEvents(res.text())) {
    let data: StreamEvent;
    try {
      data = JSON.parse(event.data) as StreamEvent;
    } catch {
      throw new ProviderError(
        `the API's stream is malformed: the ${event.event ?? "unnamed"} event is not JSON (${excerpt(event.data)})`,
      );
    }
    switch (data.type) {
      case "message_start":
        model = data.message?.model ?? model;
        input = data.message?.usage?.input_tokens ?? 0;
        output = data.message?.usage?.output_tokens ?? 0;
        break;
      case "content_block_delta":
        if (data.delta?.type === "text_delta" && typeof data.delta.text === "string") deltas.push(data.delta.text);
        break;
      case "message_delta":
        stopReason = data.delta?.stop_reason ?? stopReason;
        output = data.usage?.output_tokens ?? output;
        break;
      case "message_stop":
        stopped = true;
        break;
      case "error":
        throw new ProviderError(`the API's stream failed: ${excerpt(data.error?.message ?? event.data)}`);
    }
  }
  if (!stopped) throw new ProviderError("the API's stream ended without message_stop");
  reportDeltas(ctx, deltas);
  return {
    text: deltas.join(""),
    usage: { input_tokens: input, output_tokens: output },
    stop_reason: stopReason,
    model,
  };
};

export const providers: Record<string, Provider> = { "local-anthropic": messages };
