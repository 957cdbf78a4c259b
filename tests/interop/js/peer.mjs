// An independent js-libp2p peer (tests/p2p/test_js_interop.py): TCP, noise, yamux, identify and
// gossipsub from the js-libp2p project, nothing of ours. It dials the node at argv[2], subscribes to
// the weather and skills topics, and prints one JSON line per event:
//   {"event":"subscribed"}  once the node's subscription to the weather topic reached it;
//   {"event":"published","recipients":[...]}  after three 100 KB messages and one small one on the
//     skills topic (300 KB on one stream: past yamux's 256 KB window, so the node must credit it);
//   {"event":"message","topic":...,"hex":...}  for each message the node gossips to it.
// It exits after argv[3] ms.
import './polyfill.mjs'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { identify } from '@libp2p/identify'
import { ping } from '@libp2p/ping'
import { gossipsub } from '@chainsafe/libp2p-gossipsub'
import { multiaddr } from '@multiformats/multiaddr'

const [target, lifetimeMs] = [process.argv[2], Number(process.argv[3] || 60000)]
const say = (event) => console.log(JSON.stringify(event))
const node = await createLibp2p({
  addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
  transports: [tcp()],
  connectionEncrypters: [noise()],
  streamMuxers: [yamux()],
  services: { identify: identify(), ping: ping(), pubsub: gossipsub({ allowPublishToZeroTopicPeers: true }) },
})
node.services.pubsub.addEventListener('message', (evt) => {
  say({ event: 'message', topic: evt.detail.topic, hex: Buffer.from(evt.detail.data).toString('hex') })
})
for (const topic of ['bitterbot/weather/1', 'bitterbot/skills/1']) node.services.pubsub.subscribe(topic)
const stop = setTimeout(async () => { await node.stop(); process.exit(0) }, lifetimeMs)
await node.dial(multiaddr(target))
while (node.services.pubsub.getSubscribers('bitterbot/weather/1').length === 0) {
  await new Promise((resolve) => setTimeout(resolve, 100))
}
say({ event: 'subscribed' })
const recipients = []
for (let i = 1; i <= 3; i++) {
  recipients.push((await node.services.pubsub.publish('bitterbot/skills/1', new Uint8Array(100_000).fill(i))).recipients.length)
}
recipients.push((await node.services.pubsub.publish('bitterbot/skills/1', new TextEncoder().encode('not an envelope'))).recipients.length)
say({ event: 'published', recipients })
void stop
