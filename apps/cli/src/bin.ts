#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { isWsError } from '@ws/core';
import { runDemo } from './demo.js';

const USAGE = `Usage: ws <command> [options]

Commands:
  demo [--workdir DIR] [--keep]   open a local workspace, run commands, write and read files,
                                  and print each step (a temporary workdir unless --workdir)
  help                            show this text
`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE);
    return command === undefined ? 1 : 0;
  }
  if (command === 'demo') {
    const { values } = parseArgs({
      args: rest,
      options: { workdir: { type: 'string' }, keep: { type: 'boolean' } },
    });
    return runDemo({ ...(values.workdir ? { workdir: values.workdir } : {}), keep: values.keep ?? false });
  }
  process.stderr.write(`ws: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = isWsError(error)
      ? `${error.code}: ${error.message}`
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
    process.stderr.write(`ws: ${message}\n`);
    process.exitCode = 1;
  },
);
