import type { RouteRecordRaw } from 'vue-router'

// The Flows view (seed 001's canvas) owns this folder: its routes are
// declared here so it can grow without touching the app's router. The list
// and the builder are separate chunks: the canvas library (Vue Flow) loads
// only when a flow is opened.
export const flowsRoutes: RouteRecordRaw[] = [
  { path: '/flows', name: 'flows', component: () => import('./FlowsList.vue') },
  { path: '/flows/new', name: 'flow-new', component: () => import('./FlowBuilder.vue') },
  { path: '/flows/:id', name: 'flow', component: () => import('./FlowBuilder.vue') },
  { path: '/flows/:pathMatch(.*)*', redirect: '/flows' },
]
