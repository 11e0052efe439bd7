// Client routes. Each names the permission points that make it worth
// showing (any of them); the navigation and the guard read the same list.
import { createRouter, createWebHistory, type RouteRecordRaw } from 'vue-router'
import { canAny, restore, session } from './session'

declare module 'vue-router' {
  interface RouteMeta {
    title: string
    /** Shown to users holding any of these permission points. */
    perms?: string[]
    public?: boolean
  }
}

export const routes: RouteRecordRaw[] = [
  { path: '/login', name: 'login', component: () => import('./views/LoginView.vue'), meta: { title: 'Sign in', public: true } },
  { path: '/', name: 'dashboard', component: () => import('./views/DashboardView.vue'), meta: { title: 'Dashboard' } },
  {
    path: '/channels',
    name: 'channels',
    component: () => import('./views/ChannelsView.vue'),
    meta: { title: 'Channels', perms: ['channels.view'] },
  },
  {
    path: '/channels/:id',
    name: 'channel',
    component: () => import('./views/ChannelView.vue'),
    meta: { title: 'Channel', perms: ['channels.view'] },
  },
  { path: '/live', name: 'live', component: () => import('./views/LiveView.vue'), meta: { title: 'Live view', perms: ['streams.play'] } },
  {
    path: '/recordings',
    name: 'recordings',
    component: () => import('./views/RecordingsView.vue'),
    meta: { title: 'Recordings', perms: ['recordings.view'] },
  },
  {
    path: '/devices',
    name: 'devices',
    component: () => import('./views/DevicesView.vue'),
    meta: { title: 'GB28181 devices', perms: ['devices.view'] },
  },
  {
    path: '/rooms',
    name: 'rooms',
    component: () => import('./views/RoomsView.vue'),
    meta: { title: 'Meeting rooms', perms: ['rtc.manage'] },
  },
  {
    path: '/nodes',
    name: 'nodes',
    component: () => import('./views/NodesView.vue'),
    meta: { title: 'Nodes and media servers', perms: ['nodes.view', 'system.lifecycle.view'] },
  },
  {
    path: '/security',
    name: 'security',
    component: () => import('./views/SecurityView.vue'),
    meta: {
      title: 'Security',
      perms: ['security.users.view', 'security.roles.view', 'security.tokens.view', 'security.rtsp.view', 'security.audit.view'],
    },
  },
  {
    path: '/events',
    name: 'events',
    component: () => import('./views/EventsView.vue'),
    meta: { title: 'Events and webhooks', perms: ['system.view', 'system.logs.view'] },
  },
  {
    path: '/system',
    name: 'system',
    component: () => import('./views/SystemView.vue'),
    meta: { title: 'System', perms: ['system.view', 'system.tasks.view'] },
  },
  { path: '/:rest(.*)*', name: 'missing', component: () => import('./views/NotFoundView.vue'), meta: { title: 'Not found' } },
]

export const router = createRouter({ history: createWebHistory(), routes })

let restored = false

router.beforeEach(async (to) => {
  if (!restored) {
    restored = true
    await restore()
  }
  if (to.meta.public) return true
  if (!session.user) return { name: 'login', query: to.fullPath !== '/' ? { next: to.fullPath } : {} }
  if (to.meta.perms && !canAny(...to.meta.perms)) return { name: 'dashboard' }
  return true
})

router.afterEach((to) => {
  document.title = `${to.meta.title} · svc console`
})
