/**
 * Every runtime in the peers bench, in the order the report lists them: this library first (its
 * QuickJS engine is the baseline of every ratio), then the published peers.
 */
import { aiSdkPeer } from './adapters/ai-sdk.ts'
import { cloudflarePeer } from './adapters/cloudflare.ts'
import { runPeer } from './adapters/run.ts'
import { sebastianwesselPeer } from './adapters/sebastianwessel-quickjs.ts'
import { toolboxIsolatedVm, toolboxQuickJS } from './adapters/toolbox.ts'
import { utcpPeer } from './adapters/utcp.ts'
import type { Peer } from './peer.ts'

/** All runtimes, the baseline first. */
export const PEERS: readonly Peer[] = [toolboxQuickJS, toolboxIsolatedVm, runPeer, aiSdkPeer, utcpPeer, sebastianwesselPeer, cloudflarePeer]
