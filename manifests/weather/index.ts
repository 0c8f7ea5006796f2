import { CapError, kv, net } from "@tether/cap";
import { decodeArgs, json, outcome, refuse, text, v, type Tool } from "@tether/ext";

const SERVICE = "http://127.0.0.1:17311/v1";

export const tools: Record<string, Tool> = {
  forecast: async (args, ctx) => {
    const { city } = decodeArgs(v.object({ city: v.string() }), args);
    ctx.report(`asking the weather service about ${city}`);
    const res = await net.fetch(`${SERVICE}/forecast?city=${encodeURIComponent(city)}`);
    if (!res.ok) return refuse(`The weather service answered ${res.status} for ${city}`);
    const forecast = res.json() as { city: string; summary: string; high_c: number };
    await kv.put("last-city", city);
    return outcome([text(`${forecast.city}: ${forecast.summary}, high ${forecast.high_c}°C`), json(forecast)]);
  },
  fetch_url: async (args) => {
    const { url } = decodeArgs(v.object({ url: v.string() }), args);
    try {
      const res = await net.fetch(url);
      return outcome([text(`${res.status} from ${res.url} (${res.body.length} bytes)`)]);
    } catch (err) {
      if (err instanceof CapError) return refuse(`${err.code}: ${err.message}`);
      throw err;
    }
  },
};
