import { cpus, loadavg, release, totalmem } from 'node:os';

export interface MachineDescription {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  chromium: string;
  puppeteerCore: string;
  /** 1-minute load average when the run started and ended: a busy shared machine shows here. */
  loadAverage: { start: number; end?: number };
}

export function describeMachine(chromium: string, puppeteerCore: string): MachineDescription {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${process.platform} ${release()}`,
    node: process.version,
    chromium,
    puppeteerCore,
    loadAverage: { start: Math.round((loadavg()[0] ?? 0) * 100) / 100 },
  };
}

export function finishMachine(machine: MachineDescription): void {
  machine.loadAverage.end = Math.round((loadavg()[0] ?? 0) * 100) / 100;
}
