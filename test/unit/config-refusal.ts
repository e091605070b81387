import { ConfigError, loadConfig } from '../../src/config.js';

/** The ConfigError loading this environment stops with, or undefined when it loads; any other error is thrown. */
export function configRefusal(env: Record<string, string>): ConfigError | undefined {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  return undefined;
}
