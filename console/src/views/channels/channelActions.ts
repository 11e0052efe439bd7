// The state operations of a channel, offered only where they make sense.
import { api, call, may, type Schemas } from '../../api/client'

type Channel = Schemas['Channel']
export type ChannelAction = 'start' | 'stop' | 'pause' | 'retry' | 'activate' | 'return-to-pending'

export const actionLabels: Record<ChannelAction, string> = {
  start: 'Start',
  stop: 'Stop',
  pause: 'Pause recovery',
  retry: 'Retry now',
  activate: 'Activate',
  'return-to-pending': 'Return to pending',
}

export function actionsFor(c: Channel): ChannelAction[] {
  if (!may('POST', '/api/v2/channels/{channelId}/start')) return []
  if (c.activationState === 'Pending') return ['activate']
  const out: ChannelAction[] = []
  const running = c.desiredState === 'Running'
  if (!running || ['Offline', 'Failed', 'Paused'].includes(c.actualState)) out.push('start')
  if (running) out.push('stop')
  if (running && !c.autoRecoveryPaused) out.push('pause')
  if (['Retrying', 'Failed'].includes(c.actualState)) out.push('retry')
  if (!running) out.push('return-to-pending')
  return out
}

export async function runAction(c: Channel, a: ChannelAction): Promise<void> {
  const path = { params: { path: { channelId: c.channelId } } }
  switch (a) {
    case 'start':
      await call(api.POST('/api/v2/channels/{channelId}/start', path))
      break
    case 'stop':
      await call(api.POST('/api/v2/channels/{channelId}/stop', path))
      break
    case 'pause':
      await call(api.POST('/api/v2/channels/{channelId}/pause', path))
      break
    case 'retry':
      await call(api.POST('/api/v2/channels/{channelId}/retry', path))
      break
    case 'activate':
      await call(api.POST('/api/v2/channels/{channelId}/activate', path))
      break
    case 'return-to-pending':
      await call(api.POST('/api/v2/channels/{channelId}/return-to-pending', path))
      break
  }
}
