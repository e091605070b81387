/** One sample of Prometheus text exposition: `name{label="value",…} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a `/metrics` answer (comment lines skipped); a line that is no sample throws. */
export function parseSamples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`unparsable sample: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The samples the service at `url` answers on `/metrics` now (throws on any other answer than 200). */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return parseSamples(await res.text());
}

/** The value of a metric without labels (a gauge such as `cairn_git_pushes_in_flight`), or undefined when it is not exposed. */
export async function metricValue(url: string, name: string): Promise<number | undefined> {
  return (await scrape(url)).find((sample) => sample.name === name && Object.keys(sample.labels).length === 0)?.value;
}
