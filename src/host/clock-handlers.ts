// clock.profile in the engine host: reads a hardware profile (`profile-hw --out`, or the
// `profile-hw --json` answer holding one) from a folder the client may read and answers with its
// measured curves, which the studio's clock knob prices steps by. Only the curves travel: the
// studio prices each step itself, as it does for the modelled presets.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type HardwareProfile, jsonErrorPosition, parseHardwareProfile, Refusal } from '../engine/index.js';
import type { HandlerModule } from './handler-context.js';

/** Far above any profile (a few kilobytes): a larger file is not one, and is not read. */
const MAX_PROFILE_BYTES = 1024 * 1024;

/** The profile in a file; `shown` is the path as the client named it (errors never quote the file). */
export function readHardwareProfile(file: string, shown: string): HardwareProfile {
  if (statSync(file).size > MAX_PROFILE_BYTES) throw new Refusal(`${shown}: too large to be a hardware profile`);
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Refusal(`${shown}: not JSON${jsonErrorPosition(err)}`);
  }
  // `profile-hw --json` prints the report with the profile inside it.
  const inner = typeof json === 'object' && json !== null && 'profile' in json ? (json as { profile: unknown }).profile : json;
  return parseHardwareProfile(inner, shown);
}

export const clockHandlers: HandlerModule = ({ host }) => ({
  async 'clock.profile'({ path: named }, ctx) {
    let profile: HardwareProfile;
    try {
      // Outside the chosen folders, or not there: one answer, before anything is read.
      profile = readHardwareProfile(host.files.readable(named), named);
    } catch (err) {
      ctx.reply({ type: 'error', message: `measured profile clock: ${(err as Error).message.split('\n')[0]}` });
      return;
    }
    ctx.reply({
      type: 'clock.profile',
      name: path.basename(named).replace(/\.json$/i, ''),
      measuredOn: `${profile.host.cpu} (${profile.host.provider})`,
      target: profile.target,
      draft: profile.draft,
      slots: profile.slots,
      context: profile.context,
      ...(profile.longer ? { longer: profile.longer } : {}),
      ...(profile.oneRequest ? { oneRequest: profile.oneRequest } : {}),
      ...(profile.draftAfterTargetMs ? { draftAfterTargetMs: profile.draftAfterTargetMs } : {}),
    });
  },
});
