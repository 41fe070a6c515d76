import { type DestinationStream, type Logger, pino } from 'pino';

/** Paths never written to logs: credentials and key material, wherever they appear. */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-islet-internal-token"]',
  'apiKey',
  '*.apiKey',
  'key',
  '*.key',
  'sealKeys',
  '*.sealKeys',
  'ISLET_SEAL_KEYS',
  '*.ISLET_SEAL_KEYS',
  'ISLET_INTERNAL_TOKEN',
  '*.ISLET_INTERNAL_TOKEN',
  'internalToken',
  '*.internalToken',
];

export function createLogger(options: {
  name: string;
  level?: string;
  destination?: DestinationStream;
}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      base: { pid: process.pid, component: options.name },
    },
    options.destination,
  );
}

export type { Logger };
